package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hashgate/hashgate/client"
)

// proxyRules is the rules file of TestForwardAuthRulesBehindRealProxies (docs/PROXIES.md,
// "Access rules", shows it).
const proxyRules = `default: deny
rules:
  - name: public
    paths: ["/public/**"]
    policy: allow
  - name: ops
    paths: ["/ops/**"]
    require: {level: MFA}
  - name: quote-writers
    methods: [POST, PUT, PATCH, DELETE]
    paths: ["/quotes/**"]
    require: {scopes: [quotes:write], kinds: [token]}
  - name: admins
    paths: ["/team/**"]
    require: {groups: [admins]}
  - name: order-writers
    methods: [POST]
    paths: ["/orders/**"]
    require: {scopes: [orders:write], kinds: [token]}
  - name: internal
    paths: ["/internal/**"]
    policy: deny
  - paths: ["/**"]
    require: {level: BASIC}
`

// TestForwardAuthRulesBehindRealProxies: through nginx, Caddy and Traefik with their documented
// configs, a gateway with GATEWAY_ACCESS_RULES decides each request by the forwarded method and
// normalized path: an allow rule lets an anonymous client through with no identity, a
// require rule refuses (401 without a credential, 403 short of it) every spelling of its
// path, a deny rule refuses everyone, and a passing request reaches the application with an
// X-Auth-Assertion that verifies with the gateway's JWKS.
func TestForwardAuthRulesBehindRealProxies(t *testing.T) {
	t.Parallel()
	proxies := provisionedProxies(t)
	rulesFile := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte(proxyRules), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, admin := realGateway(t, map[string]string{"GATEWAY_ACCESS_RULES": rulesFile})
	app, hits := echoUpstream(t)
	appAddr := strings.TrimPrefix(app.URL, "http://")
	ctx := context.Background()
	api := apiClient(t, gw, admin)
	login := func(user string, level client.AuthLevel, groups ...string) string {
		req := client.SessionCreateRequest{UserId: user, AuthLevel: level}
		if groups != nil {
			req.Groups = &groups
		}
		rsp, err := client.Check(api.CreateSessionWithResponse(ctx, req))
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		recordSecret(rsp.JSON201.Token)
		return rsp.JSON201.Token
	}
	mint := func(scope client.Scope) string {
		rsp, err := client.Check(api.IssueTokenWithResponse(ctx, client.TokenIssueRequest{Subject: "svc-" + string(scope),
			Scopes: []client.Scope{scope}, TtlSeconds: 3600, TokenType: client.TokenIssueRequestTokenTypeService}))
		if err != nil {
			t.Fatalf("issue a token: %v", err)
		}
		recordSecret(rsp.JSON201.Token)
		return "Bearer " + rsp.JSON201.Token
	}
	basic, mfa := []string{"X-Session-Token", login("alice", client.AuthLevelBASIC)}, []string{"X-Session-Token", login("bob", client.AuthLevelMFA)}
	reader, writer := []string{"Authorization", mint(client.ScopeQuotesRead)}, []string{"Authorization", mint(client.ScopeQuotesWrite)}
	admins, orders := []string{"X-Session-Token", login("carol", client.AuthLevelBASIC, "staff", "admins")}, []string{"Authorization", mint("orders:write")}
	keys := jwks(t, gw)

	type call struct {
		method, path string
		cred         []string
		status       int // 200: reaches the application
	}
	calls := []call{
		{"GET", "/public/app.js", nil, 200},
		{"GET", "/public/app.js", basic, 200},
		{"GET", "/orders", nil, 401},
		{"GET", "/orders", basic, 200},
		{"GET", "/ops/deploy", mfa, 200},
		{"GET", "/ops/deploy", nil, 401},
		{"GET", "/quotes/1", reader, 200},
		{"POST", "/quotes/1", writer, 200},
		{"POST", "/quotes/1", reader, 403},
		{"POST", "/quotes/1", mfa, 403},
		{"GET", "/internal/metrics", mfa, 403},
		{"GET", "/team/users", admins, 200},
		{"GET", "/Team;/users", basic, 403},
		{"POST", "/orders/1", orders, 200},
		{"POST", "/orders/1", writer, 403},
		{"GET", "/internal/metrics", nil, 403},
	}
	// Every spelling of /ops/deploy an upstream may read as it is refused to a BASIC session.
	for _, p := range []string{"/ops/deploy", "/OPS/deploy", "/Ops;x=1/deploy", "/ops./deploy", "/ops%2e/deploy",
		"/%6Fps/deploy", "//ops//deploy", "/public/../ops/deploy", "/public/%2e%2e/ops/deploy", "/public%2F..%2Fops/deploy",
		"/public/..;/ops/deploy"} {
		calls = append(calls, call{"GET", p, basic, 403})
	}
	for _, px := range proxies {
		t.Run(px.name, func(t *testing.T) {
			base := px.start(t, os.Getenv(px.env), gw, appAddr)
			for _, c := range calls {
				before := hits.Load()
				hdr := append(append([]string{}, c.cred...), spoofedIdentity...)
				r := through(t, base, c.method, c.path, "", "", false, hdr...)
				reached := hits.Load() != before
				switch {
				case c.status == 200 && (r.status != 200 || !reached):
					t.Errorf("%s %s (%s): %d, want it to reach the application: %s", c.method, c.path, credName(c.cred), r.status, r.body)
				case c.status != 200 && (reached || r.status == 200):
					t.Errorf("%s %s (%s): %d, the application saw it at level %q; want %d", c.method, c.path, credName(c.cred), r.status, r.echo.Level, c.status)
				case c.status != 200 && r.status != c.status && !(px.name == "nginx" && r.status >= 400):
					t.Errorf("%s %s (%s): %d, want %d: %s", c.method, c.path, credName(c.cred), r.status, c.status, r.body)
				case c.status == 200 && c.cred == nil:
					if r.echo.AuthHeaders != 0 && !(r.echo.AuthHeaders == 1 && r.echo.Kind == "anonymous") {
						t.Errorf("%s %s anonymous: identity reached the application: %+v", c.method, c.path, r.echo)
					}
				case c.status == 200:
					claims := verifyAssertion(t, keys, r.echo.Assertion)
					if claims["sub"] != r.echo.Subject || claims["tenant"] != r.echo.Tenant || claims["level"] != r.echo.Level || r.echo.Subject == "" {
						t.Errorf("%s %s (%s): assertion %v for %+v", c.method, c.path, credName(c.cred), claims, r.echo)
					}
					// The session's groups reach the application, in the header and the assertion;
					// never the client's spoofed ones.
					wantGroups := ""
					if c.cred != nil && c.cred[1] == admins[1] {
						wantGroups = "staff,admins"
					}
					if g, _ := json.Marshal(claims["groups"]); r.echo.Groups != wantGroups || (wantGroups != "" && string(g) != `["staff","admins"]`) {
						t.Errorf("%s %s (%s): groups %q, claim %s; want %q", c.method, c.path, credName(c.cred), r.echo.Groups, g, wantGroups)
					}
				}
			}
		})
	}
}

func credName(c []string) string {
	if c == nil {
		return "anonymous"
	}
	return c[0]
}

// jwks fetches the gateway's public keys by kid.
func jwks(t *testing.T, gw string) map[string]ed25519.PublicKey {
	t.Helper()
	resp, err := http.Get("http://" + gw + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var set struct {
		Keys []struct{ Kid, X string }
	}
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil {
			t.Fatal(err)
		}
		keys[k.Kid] = x
	}
	return keys
}

// verifyAssertion checks an X-Auth-Assertion as an upstream does, with the JWKS only.
func verifyAssertion(t *testing.T, keys map[string]ed25519.PublicKey, token string) jwt.MapClaims {
	t.Helper()
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		return keys[kid], nil
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience("hashgate-upstream"), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		t.Errorf("X-Auth-Assertion %q does not verify with the JWKS: %v", token, err)
		return claims
	}
	exp, _ := claims.GetExpirationTime()
	if exp == nil || time.Until(exp.Time) > time.Minute {
		t.Errorf("assertion lives past a minute: %v", exp)
	}
	return claims
}
