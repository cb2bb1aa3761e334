package handlers

import (
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/hashgate/hashgate/internal/testredis"
)

// bodylessContentTypes are the Content-Type headers a reverse proxy forwards from the original
// request when it asks GET /v1/authorize (nginx auth_request, Caddy forward_auth, Traefik
// ForwardAuth, Envoy ext_authz): the original body is not sent.
var bodylessContentTypes = []string{"application/json", "application/merge-patch+json",
	"application/x-www-form-urlencoded", "text/plain; charset=utf-8", "multipart/form-data; boundary=x"}

// TestBodylessRequestIgnoresContentType sends every operation that defines no request body a
// valid request with no body but a Content-Type header, as reverse proxies do: the type of a
// body that is not there must not be judged, so the answer is the operation's own (2xx or a
// handler's refusal), never 400 "empty body" or 415. Deleting operations run last so the
// fixtures stay for the others. The converse (a real body there is refused) is
// TestHostileBodyWhereNoneIsDefined.
func TestBodylessRequestIgnoresContentType(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range testredis.Backends()[:2] { // embedded and Redis 8
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			env := newHostileEnv(t, b)
			ops := env.operations(t, spec)
			// Logout (the caller's own session) before the admin revoke-all takes every session.
			last := map[string]int{"deleteQuote": 2, "revokeMyDevice": 2, "logout": 3, "deleteSession": 4, "revokeUserSessions": 5}
			rank := func(o hostileOp) int {
				if o.method != http.MethodDelete {
					return 0
				}
				return max(1, last[o.id])
			}
			sort.SliceStable(ops, func(i, j int) bool { return rank(ops[i]) < rank(ops[j]) })
			for _, o := range ops {
				if o.body != nil {
					continue
				}
				for _, cred := range o.creds {
					for _, ct := range bodylessContentTypes {
						if o.method == http.MethodDelete && ct != bodylessContentTypes[0] {
							continue // one try each: the first one deletes
						}
						r := hostileReq{method: o.method, target: env.target(o, nil), ct: ct,
							hdr: slices.Concat(cred, o.headers)}
						rec := env.h.sendHostile(env.resolve(r))
						switch {
						case rec.Code == http.StatusBadRequest || rec.Code == http.StatusUnsupportedMediaType:
							t.Errorf("%s %s (%s) with Content-Type %q and no body: %d %s", o.method, o.path,
								credName(cred), ct, rec.Code, rec.Body)
						case rec.Code >= 500:
							t.Errorf("%s %s (%s) with Content-Type %q and no body: %d %s", o.method, o.path,
								credName(cred), ct, rec.Code, rec.Body)
						case rec.Code >= 400 && !hostileHandlerStatus[rec.Code]:
							t.Errorf("%s %s (%s) with Content-Type %q and no body: refused before the handler: %d %s",
								o.method, o.path, credName(cred), ct, rec.Code, rec.Body)
						}
					}
				}
			}
		})
	}
}

// TestAuthorizeBodylessProxyRequests is what nginx and Caddy send for a JSON POST, a
// merge-patch PATCH and a form POST: GET /v1/authorize with the session token (each way) or a
// bearer, the original Content-Type and no body. Each passes with the auth headers; a real
// body is still refused.
func TestAuthorizeBodylessProxyRequests(t *testing.T) {
	t.Parallel()
	h, _ := sessionHarness(t, testredis.Backends()[0])
	tok := h.createSession("acme", "alice", nil).Token
	creds := [][]string{{"X-Session-Token", tok}, {"Cookie", cookie(tok)}, {"Authorization", h.bearer("acme", "sessions:read")}}
	for _, cred := range creds {
		for _, ct := range bodylessContentTypes {
			rec := h.do("GET", "/v1/authorize", nil, cred[0], cred[1], "Content-Type", ct)
			if rec.Code != http.StatusOK || rec.Header().Get("X-Auth-Tenant") != "acme" {
				t.Errorf("authorize (%s, Content-Type %q, no body): %d %v %s", cred[0], ct, rec.Code, rec.Header(), rec.Body)
			}
		}
		rec := h.do("GET", "/v1/authorize", `{"a":1}`, cred[0], cred[1])
		wantProblem(t, rec, http.StatusBadRequest, "validation")
	}
}

func credName(cred []string) string {
	if len(cred) == 0 {
		return "no credential"
	}
	return cred[0]
}

// Envoy's ext_authz HTTP filter calls the authorization service with the original request's
// method (path_override fixes only the path): forward auth answers any body-less method as
// GET /v1/authorize (but HEAD, which net/http answers without a body: 405). A body is refused
// as before.
func TestAuthorizeAnyMethodWithoutBody(t *testing.T) {
	t.Parallel()
	h, _ := sessionHarness(t, testredis.Backends()[0])
	tok := h.createSession("acme", "alice", nil).Token
	if rec := h.do("HEAD", "/v1/authorize", nil, "X-Session-Token", tok); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("HEAD /v1/authorize: %d", rec.Code)
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		rec := h.do(m, "/v1/authorize?level=BASIC", nil, "X-Session-Token", tok, "Content-Type", "application/json")
		if rec.Code != http.StatusOK || rec.Header().Get("X-Auth-Subject") != "alice" {
			t.Errorf("%s /v1/authorize without a body: %d %v %s", m, rec.Code, rec.Header(), rec.Body)
		}
		wantProblem(t, h.do(m, "/v1/authorize?level=MFA", nil, "X-Session-Token", tok), http.StatusForbidden, "step-up-required")
		if rec := h.do(m, "/v1/authorize", nil); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s /v1/authorize without a credential: %d %s", m, rec.Code, rec.Body)
		}
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if rec := h.do(m, "/v1/authorize", `{"a":1}`, "X-Session-Token", tok); rec.Code < 400 || rec.Code > 499 {
			t.Errorf("%s /v1/authorize with a body: %d, want a 4xx refusal", m, rec.Code)
		}
	}
}
