package handlers

import (
	"context"
	"strings"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// Authorize is the forward-auth hot path. Authentication (cookie, X-Session-Token or bearer)
// already resolved the principal — in at most one Redis round trip, none for a session read
// from the client-side cache; this only checks the level and copies the identity into
// X-Auth-* headers for the upstream.
func (s *Server) Authorize(ctx context.Context, request AuthorizeRequestObject) (AuthorizeResponseObject, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, apperr.New(apperr.Unauthenticated, "Send a session token or a bearer token.")
	}
	level := AuthLevelBASIC
	if p.Kind == auth.KindSession && p.AuthLevel == string(AuthLevelMFA) {
		level = AuthLevelMFA
	}
	if request.Params.Level != nil && *request.Params.Level == AuthLevelMFA && level != AuthLevelMFA {
		return nil, apperr.New(apperr.StepUpRequired, "This resource needs an MFA step-up.")
	}
	lv := string(level)
	res := Authorize200JSONResponse{
		Body:    AuthorizeResult{Subject: p.Subject, Tenant: p.Tenant, AuthLevel: level},
		Headers: Authorize200ResponseHeaders{XAuthSubject: &p.Subject, XAuthTenant: &p.Tenant, XAuthLevel: &lv, CacheControl: &sessNoStore},
	}
	if p.Kind == auth.KindSession {
		res.Body.SessionId, res.Headers.XAuthSession = &p.SessionID, &p.SessionID
	} else {
		scopes := strings.Join(p.Scopes, " ")
		res.Body.Scopes, res.Headers.XAuthScopes = &p.Scopes, &scopes
	}
	return res, nil
}
