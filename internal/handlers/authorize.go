package handlers

import (
	"context"
	"encoding/json"
	"net/http"
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
		Headers: Authorize200ResponseHeaders{XAuthSubject: &p.Subject, XAuthTenant: &p.Tenant, XAuthLevel: &lv, CacheControl: &noStore},
	}
	if p.Kind == auth.KindSession {
		res.Body.SessionId, res.Headers.XAuthSession = &p.SessionID, &p.SessionID
	} else {
		scopes := strings.Join(p.Scopes, " ")
		res.Body.Scopes, res.Headers.XAuthScopes = &p.Scopes, &scopes
	}
	return authorizeOK{res}, nil
}

// authorizeOK writes Authorize200JSONResponse directly: the forward-auth answer is the
// response the gateway writes most, and the generated writer formats every header with
// fmt.Sprint and canonicalises its name on each call. Same status, headers and body.
type authorizeOK struct{ Authorize200JSONResponse }

func (r authorizeOK) VisitAuthorizeResponse(w http.ResponseWriter) error {
	body, err := json.Marshal(r.Body)
	if err != nil {
		return err
	}
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	h["Cache-Control"] = []string{noStore}
	set := func(name string, v *string) {
		if v != nil {
			h[name] = []string{*v}
		}
	}
	set("X-Auth-Subject", r.Headers.XAuthSubject)
	set("X-Auth-Tenant", r.Headers.XAuthTenant)
	set("X-Auth-Level", r.Headers.XAuthLevel)
	set("X-Auth-Session", r.Headers.XAuthSession)
	set("X-Auth-Scopes", r.Headers.XAuthScopes)
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(append(body, '\n'))
	return err
}
