package handlers

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/accessrules"
	"github.com/hashgate/hashgate/internal/testredis"
)

const testRules = `default: deny
rules:
  - name: public
    paths: ["/public/**"]
    policy: allow
  - name: admin
    paths: ["/admin/**"]
    require: {level: MFA}
  - name: staff
    paths: ["/staff/**"]
    require: {groups: [staff]}
  - name: quotes-write
    methods: [POST]
    paths: ["/api/quotes/**"]
    require: {scopes: [quotes:write], kinds: [token]}
  - name: blocked
    paths: ["/internal/**"]
    policy: deny
  - paths: ["/**"]
    require: {level: BASIC}
`

// rulesHarness is a session harness whose forward auth applies rules.
func rulesHarness(t *testing.T, rules string) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := accessrules.Open(path, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, testredis.Backends()[0], func(h *harness, d *Deps) {
		svc, _ := newSessionService(t, h.store, h.prefix, 0)
		d.Sessions, d.SessionAuth, d.Rules = svc, svc, holder
	})
}

// TestAuthorizeRules: forward auth decides the forwarded request by the first matching rule:
// 204 anonymous for allow, 401 without a credential where one is required, 403 naming the
// rule and what is missing, 200 with the identity and its assertion.
func TestAuthorizeRules(t *testing.T) {
	t.Parallel()
	h := rulesHarness(t, testRules)
	sess := "X-Session-Token\x00" + h.createSession("acme", "alice", nil).Token
	reader := "Authorization\x00" + h.bearer("acme", "quotes:read")
	writer := "Authorization\x00" + h.bearer("acme", "quotes:write")
	for _, c := range []struct {
		name, cred, method, uri string
		status                  int
		slug, detail            string
	}{
		{"public anonymous", "", "GET", "/public/app.js", 204, "", ""},
		{"public with a session", sess, "GET", "/public/app.js", 200, "", ""},
		{"catch-all anonymous", "", "GET", "/app", 401, "unauthenticated", ""},
		{"catch-all session", sess, "GET", "/app", 200, "", ""},
		{"admin by case and ;", sess, "GET", "/ADMIN;/users", 403, "step-up-required", "rule 1 (admin) requires level MFA"},
		{"admin by %2e and ..", sess, "GET", "/public/%2e%2e/admin%2e/", 403, "step-up-required", "rule 1 (admin)"},
		{"groups unmet for sessions", sess, "GET", "/staff/x", 403, "access-denied", "rule 2 (staff) requires membership of one of the groups staff"},
		{"token without the scope", reader, "POST", "/api/quotes/1", 403, "access-denied", "rule 3 (quotes-write) requires a token with the scopes quotes:write"},
		{"token with the scope", writer, "POST", "/api/quotes/1", 200, "", ""},
		{"session where a token is required", sess, "POST", "/api/quotes/1", 403, "access-denied", "a credential of kind token"},
		{"deny with a credential", sess, "GET", "/internal/x", 403, "access-denied", "rule 4 (blocked)"},
		{"deny anonymous", "", "GET", "/internal/x", 403, "access-denied", "rule 4 (blocked)"},
		{"undecodable path", sess, "GET", "/admin%zz", 403, "access-denied", "invalid path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			headers := []string{"X-Forwarded-Method", c.method, "X-Forwarded-Uri", c.uri, "X-Forwarded-Host", "app.example.com"}
			if c.cred != "" {
				name, val, _ := strings.Cut(c.cred, "\x00")
				headers = append(headers, name, val)
			}
			rec := h.do("GET", "/v1/authorize", nil, headers...)
			switch {
			case c.status == 204:
				if rec.Code != 204 || rec.Header().Get("X-Auth-Kind") != "anonymous" || rec.Header().Get("X-Auth-Subject") != "" {
					t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
				}
			case c.status == 200:
				if rec.Code != 200 || rec.Header().Get("X-Auth-Subject") == "" || rec.Header().Get("X-Auth-Assertion") == "" {
					t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
				}
			default:
				p := wantProblem(t, rec, c.status, c.slug)
				if !strings.Contains(p.Detail, c.detail) {
					t.Fatalf("detail %q lacks %q", p.Detail, c.detail)
				}
				if c.cred != "" {
					if _, secret, _ := strings.Cut(c.cred, "\x00"); strings.Contains(rec.Body.String(), strings.TrimPrefix(secret, "Bearer ")) {
						t.Fatal("the refusal carries the credential")
					}
				}
			}
		})
	}
}

// TestAuthorizeRulesForwardedHeaders: nginx's X-Original-URI/-Method decide as Caddy's and
// Traefik's X-Forwarded-*; a request with no forwarded target, or two that differ (a
// client's own X-Forwarded-Uri beside nginx's X-Original-URI), is refused.
func TestAuthorizeRulesForwardedHeaders(t *testing.T) {
	t.Parallel()
	h := rulesHarness(t, testRules)
	sess := h.createSession("acme", "alice", nil).Token
	if rec := h.do("GET", "/v1/authorize", nil, "X-Original-URI", "/public/x", "X-Original-Method", "GET"); rec.Code != 204 {
		t.Fatalf("nginx's headers: %d %s", rec.Code, rec.Body)
	}
	wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Original-URI", "/Admin/", "X-Session-Token", sess), 403, "step-up-required")
	for _, hs := range [][]string{
		{"X-Session-Token", sess},
		{"X-Session-Token", sess, "X-Forwarded-Uri", "/public/x", "X-Original-URI", "/admin/x"},
		{"X-Session-Token", sess, "X-Original-URI", "/app", "X-Forwarded-Method", "GET", "X-Original-Method", "POST"},
	} {
		wantProblem(t, h.do("GET", "/v1/authorize", nil, hs...), http.StatusForbidden, "access-denied")
	}
	// A session whose login waits for its MFA verify is not logged in: anonymous on an allow
	// rule, 401 mfa-required where a credential is required.
	pending := h.createSession("acme", "carol", map[string]any{"mfaRequired": true}).Token
	if rec := h.do("GET", "/v1/authorize", nil, "X-Forwarded-Uri", "/public/x", "X-Session-Token", pending); rec.Code != 204 {
		t.Fatalf("pending login on an allow rule: %d %s", rec.Code, rec.Body)
	}
	wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Forwarded-Uri", "/app", "X-Session-Token", pending), 401, "mfa-required")
	// Envoy keeps the original method on the check itself.
	wantProblem(t, h.do("POST", "/v1/authorize", nil, "X-Forwarded-Uri", "/api/quotes/1", "X-Session-Token", sess), 403, "access-denied")
}
