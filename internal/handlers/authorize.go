package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Authorize is the forward-auth hot path. Authentication (cookie, X-Session-Token or bearer)
// already resolved the principal — in at most one Redis round trip, none for a session read
// from the client-side cache; this only checks the level and copies the identity into
// X-Auth-* headers for the upstream, with X-Auth-Assertion, the same identity as a short-lived
// JWT (reused per credential: signed about once per 40 s). Under access rules
// (GATEWAY_ACCESS_RULES) the authentication middleware has already decided the forwarded
// request (http_rules.go).
func (s *Server) Authorize(ctx context.Context, request AuthorizeRequestObject) (AuthorizeResponseObject, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, apperr.New(apperr.Unauthenticated, "Send a session token or a bearer token.")
	}
	// A session whose login waits for its MFA verify is not logged in: 401 mfa-required.
	if err := sessions.LoggedIn(p); err != nil {
		return nil, err
	}
	level := AuthLevelBASIC
	if p.Kind == auth.KindSession && p.AuthLevel == string(AuthLevelMFA) {
		level = AuthLevelMFA
	}
	if request.Params.Level != nil && *request.Params.Level == AuthLevelMFA && level != AuthLevelMFA {
		return nil, apperr.New(apperr.StepUpRequired, "This resource needs an MFA step-up.")
	}
	r := &authorizeOK{AuthorizeResult: AuthorizeResult{Kind: AuthorizeResultKindToken, Subject: p.Subject, TenantId: p.Tenant, AuthLevel: level}}
	if p.Kind == auth.KindSession {
		r.Kind, r.SessionId = AuthorizeResultKindSession, &p.SessionID
		if len(p.Groups) > 0 {
			r.Groups = &p.Groups
		}
	} else {
		r.Scopes = &p.Scopes
		if p.Act != nil {
			r.Actor = &p.Act.Subject
		}
	}
	var err error
	r.assertion, err = s.assertions.AssertKept(auth.Assertion{Kind: string(r.Kind), Subject: p.Subject, Tenant: p.Tenant,
		Level: string(level), Groups: p.Groups, SessionID: p.SessionID, TokenID: p.TokenID, Act: p.Act}, p.Derived)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// authorizeRoute is the forward-auth route: the generated wrapper (w.Authorize, which binds the
// query and runs the strict handler) for a request with a query, and the same call made
// directly for one without — what reverse proxies send on every request — where binding finds
// no parameter (the query parser's map, reflection and the strict handler's boxing cost the
// hot path five allocations). It is used only while the strict handler has no middleware
// (NewEcho checks), so both ways run the same code.
func (s *Server) authorizeRoute(w ServerInterfaceWrapper) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().URL.RawQuery != "" {
			return w.Authorize(c)
		}
		r, err := s.Authorize(c.Request().Context(), AuthorizeRequestObject{})
		if err != nil || r == nil {
			return err
		}
		return r.VisitAuthorizeResponse(c.Response())
	}
}

// authorizeOK is the 200 answer: the AuthorizeResult body and the same values in X-Auth-*
// headers (Authorize200JSONResponse's shape). It is written directly: the forward-auth answer
// is the response the gateway writes most, and the generated writer formats every header with
// fmt.Sprint and canonicalises its name on each call. Same status, headers and body. The
// header values and the body are built in the answer's own arrays: one allocation for all
// three (the header map keeps the values, the writer copies the body).
type authorizeOK struct {
	AuthorizeResult
	assertion string
	vals      [11]string
	buf       [256]byte
}

func (r *authorizeOK) VisitAuthorizeResponse(w http.ResponseWriter) error {
	body, ok := appendAuthorizeJSON(r.buf[:0], &r.AuthorizeResult)
	if !ok {
		var err error
		if body, err = json.Marshal(r.AuthorizeResult); err != nil {
			return err
		}
	}
	// One backing array for every header value; the names are already canonical.
	r.vals = [11]string{"application/json", noStore, r.Subject, r.TenantId, string(r.AuthLevel), string(r.Kind), r.assertion}
	n := 7
	if r.Actor != nil {
		r.vals[n] = *r.Actor
		n++
	}
	if r.SessionId != nil {
		r.vals[n] = *r.SessionId
		n++
	}
	if r.Scopes != nil {
		r.vals[n] = strings.Join(*r.Scopes, " ")
		n++
	}
	if r.Groups != nil {
		r.vals[n] = strings.Join(*r.Groups, session.GroupsSep)
		n++
	}
	vs := r.vals[:n:n]
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = vs[0:1:1], vs[1:2:2]
	h["X-Auth-Subject"], h["X-Auth-Tenant"], h["X-Auth-Level"], h["X-Auth-Kind"] = vs[2:3:3], vs[3:4:4], vs[4:5:5], vs[5:6:6]
	h["X-Auth-Assertion"] = vs[6:7:7]
	if n = 7; r.Actor != nil {
		h["X-Auth-Actor"] = vs[n : n+1 : n+1]
		n++
	}
	if r.SessionId != nil {
		h["X-Auth-Session"] = vs[n : n+1 : n+1]
		n++
	}
	if r.Scopes != nil {
		h["X-Auth-Scopes"] = vs[n : n+1 : n+1]
		n++
	}
	if r.Groups != nil {
		h["X-Auth-Groups"] = vs[n : n+1 : n+1]
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(append(body, '\n'))
	return err
}

// appendAuthorizeJSON appends r as encoding/json would (same members, same order, same
// omissions) when every string is plain printable ASCII with nothing to escape — ids, tags and
// levels always are; ok is false otherwise and the caller falls back to json.Marshal.
func appendAuthorizeJSON(b []byte, r *AuthorizeResult) ([]byte, bool) {
	plain := func(v string) bool {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	quoted := func(v string) { b = append(append(append(b, '"'), v...), '"') }
	member := func(name, v string) bool {
		if !plain(v) {
			return false
		}
		b = append(append(append(b, '"'), name...), `":`...)
		quoted(v)
		return true
	}
	list := func(name string, vs []string) bool {
		b = append(append(append(b, `,"`...), name...), `":[`...)
		for i, v := range vs {
			if !plain(v) {
				return false
			}
			if i > 0 {
				b = append(b, ',')
			}
			quoted(v)
		}
		b = append(b, ']')
		return true
	}
	b = append(b, '{')
	if r.Actor != nil {
		if !member("actor", *r.Actor) {
			return nil, false
		}
		b = append(b, ',')
	}
	if !member("authLevel", string(r.AuthLevel)) {
		return nil, false
	}
	if r.Groups != nil && !list("groups", *r.Groups) {
		return nil, false
	}
	b = append(b, ',')
	if !member("kind", string(r.Kind)) {
		return nil, false
	}
	if r.Scopes != nil && !list("scopes", *r.Scopes) {
		return nil, false
	}
	if r.SessionId != nil {
		b = append(b, ',')
		if !member("sessionId", *r.SessionId) {
			return nil, false
		}
	}
	b = append(b, ',')
	if !member("subject", r.Subject) {
		return nil, false
	}
	b = append(b, ',')
	if !member("tenantId", r.TenantId) {
		return nil, false
	}
	return append(b, '}'), true
}
