package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/accessrules"
	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// RuleSource is the access rules forward auth applies (GATEWAY_ACCESS_RULES): the set in
// force, read once per request (an *accessrules.Holder, which reloads it).
type RuleSource interface {
	Current() *accessrules.Set
}

// The forwarded request's headers, in Go's canonical spelling: nginx sends X-Original-URI
// and X-Original-Method (as its documented configuration sets them), Caddy and Traefik
// X-Forwarded-Method, X-Forwarded-Host and X-Forwarded-Uri.
const (
	hForwardedURI    = "X-Forwarded-Uri"
	hOriginalURI     = "X-Original-Uri"
	hForwardedMethod = "X-Forwarded-Method"
	hOriginalMethod  = "X-Original-Method"
	hForwardedHost   = "X-Forwarded-Host"
)

// forwardedRule is the rule that decides the request r forwards, or the refusal of one that
// cannot be decided: no forwarded URI, or the same information sent twice and differently (a
// client's own X-Forwarded-Uri beside the X-Original-URI nginx sets: which one the proxy
// routed by cannot be known, so neither is trusted). A deny rule is its 403 here.
func forwardedRule(set *accessrules.Set, r *http.Request) (*accessrules.Rule, error) {
	uri, ok := oneOf(r.Header, hForwardedURI, hOriginalURI)
	if !ok || uri == "" {
		return nil, apperr.New(apperr.AccessDenied, "The access rules decide the forwarded request: send its target in exactly one way (X-Forwarded-Uri or X-Original-URI).")
	}
	method, ok := oneOf(r.Header, hForwardedMethod, hOriginalMethod)
	if !ok {
		return nil, apperr.New(apperr.AccessDenied, "The forwarded method is sent twice and differently (X-Forwarded-Method, X-Original-Method).")
	}
	if method == "" {
		method = r.Method // Envoy: the original method on the check itself
	}
	host, ok := oneOf(r.Header, hForwardedHost, hForwardedHost)
	if !ok {
		return nil, apperr.New(apperr.AccessDenied, "X-Forwarded-Host is sent more than once.")
	}
	rule := set.Decide(accessrules.Request{Method: method, Host: host, URI: uri})
	if rule.Policy == accessrules.Deny {
		return nil, apperr.New(apperr.AccessDenied, "Denied by "+rule.Label()+" of the access rules.")
	}
	return rule, nil
}

// oneOf is the single value the two headers a and b carry together: "" when neither is sent;
// ok is false when they carry more than one value or two different ones.
func oneOf(h http.Header, a, b string) (string, bool) {
	va, vb := h[a], h[b]
	if len(va) > 1 || len(vb) > 1 {
		return "", false
	}
	switch {
	case len(va) == 1 && len(vb) == 1 && a != b:
		return va[0], va[0] == vb[0]
	case len(va) == 1:
		return va[0], true
	case len(vb) == 1:
		return vb[0], true
	}
	return "", true
}

// checkRule refuses principal p when rule requires what it lacks: step-up-required when only
// the level is short, access-denied otherwise; the detail names the rule and what is missing.
func checkRule(rule *accessrules.Rule, p *auth.Principal) error {
	if rule.Policy != accessrules.Require || p.LoginPending { // a pending login answers 401 in Authorize
		return nil
	}
	subj := accessrules.Subject{Kind: accessrules.KindToken, Level: string(AuthLevelBASIC), Tenant: p.Tenant, Scopes: p.Scopes}
	if p.Kind == auth.KindSession {
		subj.Kind, subj.Level, subj.Scopes, subj.Groups = accessrules.KindSession, p.AuthLevel, nil, p.Groups
	}
	if rule.Require.Met(subj) {
		return nil
	}
	missing := rule.Require.Missing(subj)
	kind := apperr.AccessDenied
	if missing == "level MFA" {
		kind = apperr.StepUpRequired
	}
	return apperr.New(kind, "The access rules' "+rule.Label()+" requires "+missing+".")
}

// anonymousOK is forward auth's answer for an allow rule without a valid credential: 204,
// X-Auth-Kind anonymous, no identity.
func anonymousOK(c echo.Context) error {
	h := c.Response().Header()
	h["Cache-Control"], h["X-Auth-Kind"] = []string{noStore}, []string{"anonymous"}
	return c.NoContent(http.StatusNoContent)
}
