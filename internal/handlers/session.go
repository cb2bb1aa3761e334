package handlers

import (
	"context"
)

// The end user's session cookie is cleared with the same attributes it is set with.
const (
	clearSessionCookie = SessionCookieName + "=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"
	clearSiteData      = `"cookies", "storage"`
)

// GetCurrentSession is "who am I". Authentication already read the session's view (and slid
// the idle window if it was due); Current answers with that view, so this costs no second read.
func (s *Server) GetCurrentSession(ctx context.Context, _ GetCurrentSessionRequestObject) (GetCurrentSessionResponseObject, error) {
	v, err := s.Sessions.Current(ctx, caller(ctx))
	if err != nil {
		return nil, err
	}
	return GetCurrentSession200JSONResponse{Body: sessionView(v, true), Headers: GetCurrentSession200ResponseHeaders{CacheControl: &noStore}}, nil
}

// Logout revokes the caller's session, clears the cookie and asks the browser to drop
// cookies and storage for this origin.
func (s *Server) Logout(ctx context.Context, _ LogoutRequestObject) (LogoutResponseObject, error) {
	if err := s.Sessions.Logout(ctx, caller(ctx)); err != nil {
		return nil, err
	}
	cookie, site := clearSessionCookie, clearSiteData
	return Logout204Response{Headers: Logout204ResponseHeaders{SetCookie: &cookie, ClearSiteData: &site}}, nil
}

// ListMyDevices is the caller's live sessions; the caller's own is marked current.
func (s *Server) ListMyDevices(ctx context.Context, request ListMyDevicesRequestObject) (ListMyDevicesResponseObject, error) {
	p := caller(ctx)
	list, err := s.Sessions.Devices(ctx, p, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	return ListMyDevices200JSONResponse{Body: sessionList(list, p.SessionID),
		Headers: ListMyDevices200ResponseHeaders{Link: nextLink(ctx, list.NextCursor)}}, nil
}

// RevokeMyDevice signs out one of the caller's sessions (idempotent); another user's is 404.
func (s *Server) RevokeMyDevice(ctx context.Context, request RevokeMyDeviceRequestObject) (RevokeMyDeviceResponseObject, error) {
	return RevokeMyDevice204Response{}, s.Sessions.RevokeDevice(ctx, caller(ctx), request.SessionId)
}

// RevokeMyOtherDevices signs out every other session of the caller in one atomic step; the
// caller's own session stays.
func (s *Server) RevokeMyOtherDevices(ctx context.Context, _ RevokeMyOtherDevicesRequestObject) (RevokeMyOtherDevicesResponseObject, error) {
	n, err := s.Sessions.RevokeOtherDevices(ctx, caller(ctx))
	if err != nil {
		return nil, err
	}
	return RevokeMyOtherDevices200JSONResponse{Body: RevokedCount{Revoked: n}}, nil
}
