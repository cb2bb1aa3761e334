package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// SessionService is what the sessions operations call. (Filled in when the sessions issue lands.)
type SessionService interface{}

// CreateSession answers 501 until the sessions issue lands.
func (s *Server) CreateSession(ctx context.Context, request CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "CreateSession is not built yet.")
}

// GetSession answers 501 until the sessions issue lands.
func (s *Server) GetSession(ctx context.Context, request GetSessionRequestObject) (GetSessionResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetSession is not built yet.")
}

// DeleteSession answers 501 until the sessions issue lands.
func (s *Server) DeleteSession(ctx context.Context, request DeleteSessionRequestObject) (DeleteSessionResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "DeleteSession is not built yet.")
}

// RotateSession answers 501 until the sessions issue lands.
func (s *Server) RotateSession(ctx context.Context, request RotateSessionRequestObject) (RotateSessionResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "RotateSession is not built yet.")
}

// CreateMfaChallenge answers 501 until the sessions issue lands.
func (s *Server) CreateMfaChallenge(ctx context.Context, request CreateMfaChallengeRequestObject) (CreateMfaChallengeResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "CreateMfaChallenge is not built yet.")
}

// VerifyMfa answers 501 until the sessions issue lands.
func (s *Server) VerifyMfa(ctx context.Context, request VerifyMfaRequestObject) (VerifyMfaResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "VerifyMfa is not built yet.")
}

// ListUserSessions answers 501 until the sessions issue lands.
func (s *Server) ListUserSessions(ctx context.Context, request ListUserSessionsRequestObject) (ListUserSessionsResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ListUserSessions is not built yet.")
}

// RevokeUserSessions answers 501 until the sessions issue lands.
func (s *Server) RevokeUserSessions(ctx context.Context, request RevokeUserSessionsRequestObject) (RevokeUserSessionsResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "RevokeUserSessions is not built yet.")
}
