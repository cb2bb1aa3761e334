package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// GetCurrentSession answers 501 until the session issue lands.
func (s *Server) GetCurrentSession(ctx context.Context, request GetCurrentSessionRequestObject) (GetCurrentSessionResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetCurrentSession is not built yet.")
}

// Logout answers 501 until the session issue lands.
func (s *Server) Logout(ctx context.Context, request LogoutRequestObject) (LogoutResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "Logout is not built yet.")
}

// ListMyDevices answers 501 until the session issue lands.
func (s *Server) ListMyDevices(ctx context.Context, request ListMyDevicesRequestObject) (ListMyDevicesResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ListMyDevices is not built yet.")
}

// RevokeMyDevice answers 501 until the session issue lands.
func (s *Server) RevokeMyDevice(ctx context.Context, request RevokeMyDeviceRequestObject) (RevokeMyDeviceResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "RevokeMyDevice is not built yet.")
}
