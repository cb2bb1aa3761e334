package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// Security scheme names in api/openapi.yaml.
const (
	schemeBearer        = "bearerAuth"
	schemeSessionCookie = "sessionCookie"
	schemeSessionHeader = "sessionHeader"
	// SessionCookieName is the end user's session cookie.
	SessionCookieName = "__Host-hg_session"
	// SessionHeaderName carries the session token for non-browser clients.
	SessionHeaderName = "X-Session-Token"
)

// SessionAuthenticator resolves a session token to its principal in one Redis round trip,
// refreshing the idle window when little of it is left. AuthenticateView also puts the
// session's full view on the principal (Principal.Session), for "who am I"; Authenticate
// reads only what the decision needs.
type SessionAuthenticator interface {
	Authenticate(ctx context.Context, token string) (*auth.Principal, error)
	AuthenticateView(ctx context.Context, token string) (*auth.Principal, error)
}

// errAbsent means "this scheme's credential was not sent": the next alternative is tried, and
// if none is present the caller gets 401 Unauthenticated.
var errAbsent = errors.New("credential absent")

// authenticate is kin-openapi's AuthenticationFunc. Authentication itself already ran in
// authnMiddleware (before the body was read); here the validator only confirms a principal is
// on the request, so its security step agrees with ours.
func (s *Server) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if _, ok := auth.PrincipalFrom(in.RequestValidationInput.Request.Context()); ok {
		return nil
	}
	return errAbsent
}

// authScheme verifies the credential of one security scheme and enforces the operation's
// scopes. errAbsent means the scheme's credential was not sent.
// view: the operation answers with the session's view (viewRoutes).
func (s *Server) authScheme(r *http.Request, scheme string, scopes []string, view bool) (*auth.Principal, error) {
	ctx := r.Context()
	var (
		p   *auth.Principal
		err error
	)
	switch scheme {
	case schemeBearer:
		p, err = s.authBearer(ctx, r)
	case schemeSessionCookie:
		v := cookieValue(r, SessionCookieName)
		if v == "" {
			return nil, errAbsent
		}
		p, err = s.authSession(ctx, v, view)
	case schemeSessionHeader:
		tok := r.Header.Get(SessionHeaderName)
		if tok == "" {
			return nil, errAbsent
		}
		p, err = s.authSession(ctx, tok, view)
	default:
		return nil, apperr.Newf(apperr.Internal, "unknown security scheme %q", scheme)
	}
	if err != nil {
		return nil, err
	}
	for _, scope := range scopes {
		if !p.HasScope(scope) {
			return nil, apperr.Newf(apperr.InsufficientScope, "This operation needs the %s scope.", scope).
				WithHeader("WWW-Authenticate", `Bearer realm="hashgate", error="insufficient_scope", scope="`+scope+`"`)
		}
	}
	return p, nil
}

func (s *Server) authBearer(ctx context.Context, r *http.Request) (*auth.Principal, error) {
	raw, ok := auth.BearerToken(r)
	if !ok {
		if r.Header.Get("Authorization") != "" {
			return nil, apperr.New(apperr.InvalidCredentials, "The Authorization header is not a bearer token.").
				WithHeader("WWW-Authenticate", `Bearer realm="hashgate", error="invalid_request"`)
		}
		return nil, errAbsent
	}
	claims, err := s.Auth.Verify(raw)
	if err != nil {
		return nil, invalidToken(err)
	}
	if err := s.TokenCheck.Check(ctx, claims); err != nil {
		if p := s.unavailable(err, "Cannot check the token's revocation state."); p != nil {
			return nil, p
		}
		p, ok := apperr.As(err)
		switch {
		case !ok:
			return nil, err // a failure to check is not a verdict on the token: 500, never 401
		case p.Kind != apperr.InvalidCredentials && p.Kind != apperr.Unauthenticated:
			return nil, p
		}
		return nil, invalidToken(err)
	}
	return auth.PrincipalFromClaims(claims), nil
}

func (s *Server) authSession(ctx context.Context, token string, view bool) (*auth.Principal, error) {
	authenticate := s.SessionAuth.Authenticate
	if view {
		authenticate = s.SessionAuth.AuthenticateView
	}
	p, err := authenticate(ctx, token)
	if err != nil {
		if p := s.unavailable(err, "Cannot check the session."); p != nil {
			return nil, p
		}
		if pe, ok := apperr.As(err); ok {
			return nil, pe
		}
		return nil, err
	}
	return p, nil
}

// What each credential is and where it goes, as the refusals say it.
const (
	wantBearer  = "an API token (a JWT from POST /v1/tokens, gateway token mint or the bootstrap token) as Authorization: Bearer TOKEN"
	wantSession = "the session token (hgs_..., from POST /v1/sessions) in the " + SessionHeaderName + " header or the " + SessionCookieName + " cookie"
)

// sessionTokenPrefix starts every session token (internal/sessions' token format); a JWT
// never starts so.
const sessionTokenPrefix = "hgs_"

func looksLikeSessionToken(s string) bool { return strings.HasPrefix(s, sessionTokenPrefix) }

// schemesOf reports which kinds of credential the security requirements accept.
func schemesOf(reqs openapi3.SecurityRequirements) (bearer, session bool) {
	for _, req := range reqs {
		for scheme := range req {
			switch scheme {
			case schemeBearer:
				bearer = true
			case schemeSessionCookie, schemeSessionHeader:
				session = true
			}
		}
	}
	return bearer, session
}

// missingCredential is the 401 for a request that sent none of the credentials the operation
// takes: it names the credential and where it goes, and says so when the request carries a
// credential of the other kind.
func missingCredential(r *http.Request, reqs openapi3.SecurityRequirements) *apperr.Error {
	bearer, session := schemesOf(reqs)
	raw, sentBearer := auth.BearerToken(r)
	sentSession := r.Header.Get(SessionHeaderName) != "" || cookieValue(r, SessionCookieName) != ""
	var detail string
	switch {
	case bearer && session:
		detail = "Send " + wantBearer + ", or " + wantSession + "."
	case bearer && sentSession:
		detail = "A session token is not accepted by this operation: send " + wantBearer + "."
	case bearer:
		detail = "Send " + wantBearer + "."
	case session && sentBearer && looksLikeSessionToken(raw):
		detail = "The session token goes in the " + SessionHeaderName + " header or the " + SessionCookieName + " cookie, not in Authorization."
	case session && sentBearer:
		detail = "A bearer token is not accepted by this operation: send " + wantSession + "."
	default:
		detail = "Send " + wantSession + "."
	}
	return apperr.New(apperr.Unauthenticated, detail)
}

// sessionAsBearer replaces the verifier's "malformed token" when the bearer token is a session
// token: it belongs in the session header or cookie, where the operation takes one.
func sessionAsBearer(p *apperr.Error, reqs openapi3.SecurityRequirements) *apperr.Error {
	detail := "A session token is not accepted by this operation: send " + wantBearer + "."
	if _, session := schemesOf(reqs); session {
		detail = "This is a session token: send it in the " + SessionHeaderName + " header or the " + SessionCookieName + " cookie, not as a bearer token."
	}
	return &apperr.Error{Kind: p.Kind, Detail: detail, Headers: p.Headers, Cause: p.Cause}
}

// invalidToken renders a verification failure with the verifier's safe reason.
func invalidToken(err error) error {
	reason := "The token is not valid."
	var te *auth.TokenError
	if errors.As(err, &te) && te.Reason != "" {
		reason = "The token is not valid: " + te.Reason + "."
	} else if p, ok := apperr.As(err); ok && p.Detail != "" {
		reason = p.Detail
	}
	return apperr.Wrap(apperr.InvalidCredentials, reason, err).
		WithHeader("WWW-Authenticate", `Bearer realm="hashgate", error="invalid_token"`)
}

// cookieValue is r.Cookie(name).Value without parsing every cookie of the request into a
// slice: the first cookie of that name whose value is valid (RFC 6265 cookie-octets, plus the
// space and comma net/http tolerates), its quotes removed; "" when there is none.
func cookieValue(r *http.Request, name string) string {
	lines := r.Header["Cookie"]
	// net/http reads no cookie at all from a request carrying more than its limit
	// (defaultCookieMaxNum, 3000; GODEBUG httpcookiemaxnum is not followed here).
	n := 0
	for _, line := range lines {
		n += strings.Count(line, ";") + 1
	}
	if n > maxCookies {
		return ""
	}
	for _, line := range lines {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			k, v, ok := strings.Cut(textproto.TrimString(part), "=")
			if !ok || textproto.TrimString(k) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if validCookieValue(v) {
				return v
			}
		}
	}
	return ""
}

// maxCookies is net/http's limit of cookies read from one request.
const maxCookies = 3000

func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}
