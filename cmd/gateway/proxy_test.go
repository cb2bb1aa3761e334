package main

// Forward auth behind the real reverse proxies: nginx (auth_request) and Caddy (forward_auth)
// from Debian's packages (scripts/proxy-env.sh provisions them; scripts/test.sh exports
// HASHGATE_TEST_NGINX and HASHGATE_TEST_CADDY), each started on loopback with the config
// documented in docs/PROXIES.md (docs/proxy/*, placeholders filled in), in front of a small
// upstream that echoes what it received, with the whole gateway (serve) on real Redis 8.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/client"
	"github.com/hashgate/hashgate/internal/testredis"
)

// echoed is what the upstream application received.
type echoed struct {
	Method      string `json:"method"`
	URI         string `json:"uri"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
	Subject     string `json:"subject"`
	Tenant      string `json:"tenant"`
	Level       string `json:"level"`
	Session     string `json:"session"`
	Scopes      string `json:"scopes"`
	Kind        string `json:"kind"`
	Actor       string `json:"actor"`
	Groups      string `json:"groups"`
	Assertion   string `json:"assertion"`
	// AuthHeaders counts the identity header lines (identityHeaders): each must arrive once,
	// from the gateway.
	AuthHeaders int `json:"authHeaders"`
	// Underscored lists (sorted, comma-separated) the header names with an underscore: CGI,
	// WSGI and PHP read X_Auth_Subject as X-Auth-Subject, so none may reach the application.
	Underscored string `json:"underscored"`
}

// identityHeaders are the headers the documented configs copy from the gateway's answer (those
// it sends; a client's own never).
var identityHeaders = []string{"X-Auth-Subject", "X-Auth-Tenant", "X-Auth-Level", "X-Auth-Session", "X-Auth-Scopes",
	"X-Auth-Kind", "X-Auth-Actor", "X-Auth-Groups", "X-Auth-Assertion"}

// echoUpstream is the protected application: it answers every request with what it received.
func echoUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		for _, k := range identityHeaders {
			n += len(r.Header.Values(k))
		}
		var under []string
		for k := range r.Header {
			if strings.Contains(k, "_") {
				under = append(under, k)
			}
		}
		slices.Sort(under)
		e := echoed{Method: r.Method, URI: r.RequestURI, ContentType: r.Header.Get("Content-Type"), Body: string(b),
			Subject: r.Header.Get("X-Auth-Subject"), Tenant: r.Header.Get("X-Auth-Tenant"), Level: r.Header.Get("X-Auth-Level"),
			Session: r.Header.Get("X-Auth-Session"), Scopes: r.Header.Get("X-Auth-Scopes"), Kind: r.Header.Get("X-Auth-Kind"),
			Actor: r.Header.Get("X-Auth-Actor"), Groups: r.Header.Get("X-Auth-Groups"), Assertion: r.Header.Get("X-Auth-Assertion"),
			AuthHeaders: n, Underscored: strings.Join(under, ",")}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(e)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// realGateway starts the gateway (serve, as the binary runs it) on Redis 8 with a bootstrap
// admin token, and returns its address and that token.
func realGateway(t *testing.T, extra map[string]string) (addr, admin string) {
	t.Helper()
	env, tokenFile := redisGatewayEnv(t)
	for k, v := range extra {
		env[k] = v
	}
	addr, _, _ = startGateway(t, env)
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	admin = strings.TrimSpace(string(b))
	recordSecret(admin)
	return addr, admin
}

// redisGatewayEnv is the environment of a gateway on real Redis 8 (HASHGATE_TEST_REDIS8; the
// test is skipped without it): fresh keys from `gateway keygen`, a private key prefix, and a
// bootstrap token file, whose path it also returns.
func redisGatewayEnv(t *testing.T) (env map[string]string, tokenFile string) {
	t.Helper()
	url := os.Getenv(testredis.EnvRedis8)
	if url == "" {
		t.Skipf("%s is unset (run scripts/test.sh to provision real Redis)", testredis.EnvRedis8)
	}
	var keys bytes.Buffer
	if err := run(context.Background(), []string{"keygen"}, func(string) string { return "" }, &keys, io.Discard); err != nil {
		t.Fatal(err)
	}
	tokenFile = filepath.Join(t.TempDir(), "bootstrap-token")
	// A generous Redis timeout: these gateways start beside the whole suite on a loaded machine
	// (the start's capability probe once ran out of the default 500 ms under -race).
	env = map[string]string{"REDIS_URL": url, "GATEWAY_KEY_PREFIX": testredis.Prefix(t), "GATEWAY_BOOTSTRAP_TOKEN_FILE": tokenFile,
		"GATEWAY_REDIS_TIMEOUT": "3s"}
	for _, line := range strings.Split(strings.TrimSpace(keys.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	return env, tokenFile
}

// recordSecret appends a token to HASHGATE_SECRETS_FILE (scripts/test.sh) so the keyspace
// audit after the suite proves it never reached Redis.
func recordSecret(tok string) { recordSecretLine("token " + tok) }

// recordSecretLine appends one `kind value` line to HASHGATE_SECRETS_FILE.
func recordSecretLine(line string) {
	if path := os.Getenv("HASHGATE_SECRETS_FILE"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_, _ = f.WriteString(line + "\n")
			_ = f.Close()
		}
	}
}

// apiClient is the public Go client (package client) on the gateway at addr, calling as the
// bearer token's holder ("": without a credential).
func apiClient(t *testing.T, addr, bearer string) *client.ClientWithResponses {
	t.Helper()
	var opts []client.ClientOption
	if bearer != "" {
		opts = append(opts, client.WithBearerToken(bearer))
	}
	c, err := client.NewClientWithResponses("http://"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// proxyConfig reads a documented proxy config (docs/proxy/name) and fills in its placeholders.
func proxyConfig(t *testing.T, name string, values map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "proxy", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range values {
		if !strings.Contains(s, k) {
			t.Fatalf("docs/proxy/%s has no placeholder %s", name, k)
		}
		s = strings.ReplaceAll(s, k, v)
	}
	if left := regexp.MustCompile(`@[A-Z_]+@`).FindString(s); left != "" {
		t.Fatalf("docs/proxy/%s: placeholder %s left unfilled", name, left)
	}
	return s
}

// spoofedIdentity are a client's own identity headers, in the spellings CGI, WSGI and PHP
// read as the real ones (HTTP_X_AUTH_SUBJECT): none may reach the application.
var spoofedIdentity = []string{"X-Auth-Subject", "mallory", "X-Auth-Tenant", "other", "X-Auth-Level", "MFA",
	"X-Auth-Session", "s_forged", "X-Auth-Scopes", "tokens:write", "X-Auth-Kind", "token", "X-Auth-Actor", "mallory",
	"X-Auth-Groups", "admins", "X-Auth-Assertion", "forged.jwt.value", "X_Auth_Groups", "admins",
	"X_Auth_Subject", "root", "x_auth-tenant", "other", "X-Auth_Level", "MFA", "X_AUTH_SESSION", "s_forged",
	"X-Auth_Scopes", "tokens:admin", "X_Auth_Kind", "token", "x-auth_actor", "root"}

// gatewayIdentity is what the application must receive for a credential: the identity the
// gateway itself answers at /v1/authorize (?level=level when set), each identity header once.
func gatewayIdentity(t *testing.T, gw, level string, credential ...string) echoed {
	t.Helper()
	url := "http://" + gw + "/v1/authorize"
	if level != "" {
		url += "?level=" + level
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(credential); i += 2 {
		req.Header.Add(credential[i], credential[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the gateway refused the credential: %d %s", resp.StatusCode, b)
	}
	h := resp.Header
	e := echoed{Subject: h.Get("X-Auth-Subject"), Tenant: h.Get("X-Auth-Tenant"), Level: h.Get("X-Auth-Level"),
		Session: h.Get("X-Auth-Session"), Scopes: h.Get("X-Auth-Scopes"), Kind: h.Get("X-Auth-Kind"), Actor: h.Get("X-Auth-Actor"),
		Groups: h.Get("X-Auth-Groups"), Assertion: h.Get("X-Auth-Assertion")}
	for _, k := range identityHeaders {
		if h.Get(k) != "" {
			e.AuthHeaders++
		}
	}
	return e
}

// proxied is one request through the proxy as the client saw it.
type proxied struct {
	status int
	header http.Header
	body   string
	echo   echoed
}

// through sends one request to base; chunked sends the body without a Content-Length.
func through(t *testing.T, base, method, path, ct, body string, chunked bool, headers ...string) proxied {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // unknown length: sent chunked
		}
	}
	req, err := http.NewRequest(method, "http://"+base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(headers); i += 2 { // names sent as spelled (X_AUTH_KIND stays so)
		req.Header[headers[i]] = append(req.Header[headers[i]], headers[i+1])
	}
	client := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s through the proxy: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := proxied{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &out.echo); err != nil {
			t.Fatalf("%s %s: upstream answer does not decode: %v: %s", method, path, err, b)
		}
	}
	return out
}

// TestForwardAuthBehindRealProxies: GET, JSON POST, merge-patch PATCH and form POST (and a
// chunked JSON POST) reach the upstream through nginx, Caddy and Traefik with the identity the
// gateway answered (X-Auth-Subject, -Tenant, -Level, -Session or -Scopes, -Kind, -Actor), for
// a session cookie, an X-Session-Token and a bearer token; a client's own identity headers,
// in any spelling (X_Auth_Subject, x_auth-tenant ...), never get through; no or a bad
// credential is 401 and an MFA resource asked with a BASIC session (or a bearer) is 403,
// without the upstream seeing the request.
func TestForwardAuthBehindRealProxies(t *testing.T) {
	t.Parallel()
	proxies := provisionedProxies(t)
	gw, admin := realGateway(t, nil)
	app, hits := echoUpstream(t)
	appAddr := strings.TrimPrefix(app.URL, "http://")

	ctx := context.Background()
	api := apiClient(t, gw, admin)
	login := func(user string, level client.AuthLevel) *client.SessionToken {
		rsp, err := client.Check(api.CreateSessionWithResponse(ctx, client.SessionCreateRequest{UserId: user, AuthLevel: level}))
		if err != nil {
			t.Fatalf("login %s: %v", user, err)
		}
		return rsp.JSON201
	}
	basic, mfa := login("alice", client.AuthLevelBASIC), login("bob", client.AuthLevelMFA)
	issued, err := client.Check(api.IssueTokenWithResponse(ctx, client.TokenIssueRequest{Subject: "svc-frontend",
		Scopes: []client.Scope{client.ScopeQuotesRead}, TtlSeconds: 3600, TokenType: client.TokenIssueRequestTokenTypeService}))
	if err != nil {
		t.Fatalf("issue a token: %v", err)
	}
	minted := issued.JSON201
	recordSecret(basic.Token)
	recordSecret(mfa.Token)
	recordSecret(minted.Token)

	type cred struct {
		name   string
		header []string
	}
	creds := []cred{
		{"cookie", []string{"Cookie", "__Host-hg_session=" + basic.Token}},
		{"X-Session-Token", []string{"X-Session-Token", basic.Token}},
		{"bearer", []string{"Authorization", "Bearer " + minted.Token}},
	}
	type call struct {
		name, method, path, ct, body string
		chunked                      bool
	}
	calls := []call{
		{"GET", "GET", "/orders?page=2", "", "", false},
		{"JSON POST", "POST", "/orders", "application/json", `{"sku":"SKU-1","quantity":2}`, false},
		{"merge-patch PATCH", "PATCH", "/orders/42", "application/merge-patch+json", `{"quantity":3,"note":null}`, false},
		{"form POST", "POST", "/login/callback", "application/x-www-form-urlencoded", "state=abc&code=xyz", false},
		{"chunked JSON POST", "POST", "/orders", "application/json", `{"sku":"SKU-2"}`, true},
	}
	for _, px := range proxies {
		t.Run(px.name, func(t *testing.T) {
			base := px.start(t, os.Getenv(px.env), gw, appAddr)

			for _, c := range creds {
				id := gatewayIdentity(t, gw, "", c.header...)
				for _, k := range calls {
					hdr := append(append([]string{}, c.header...), spoofedIdentity...)
					r := through(t, base, k.method, k.path, k.ct, k.body, k.chunked, hdr...)
					want := id
					want.Method, want.URI, want.ContentType, want.Body = k.method, k.path, k.ct, k.body
					if r.status != http.StatusOK || r.echo != want {
						t.Errorf("%s with %s: %d %s\n got  %+v\n want %+v", k.name, c.name, r.status, strings.TrimSpace(r.body), r.echo, want)
					}
				}
			}

			// Level MFA: the MFA session passes, a BASIC session and a bearer are refused.
			r := through(t, base, "POST", "/admin/users", "application/json", `{"role":"admin"}`, false,
				"X-Session-Token", mfa.Token)
			want := gatewayIdentity(t, gw, "MFA", "X-Session-Token", mfa.Token)
			want.Method, want.URI, want.ContentType, want.Body = "POST", "/admin/users", "application/json", `{"role":"admin"}`
			if r.status != 200 || r.echo != want || want.Level != "MFA" {
				t.Errorf("MFA session on an MFA resource: %d %s\n got  %+v\n want %+v", r.status, r.body, r.echo, want)
			}
			before := hits.Load()
			for _, c := range creds {
				if r := through(t, base, "GET", "/admin/users", "", "", false, c.header...); r.status != http.StatusForbidden {
					t.Errorf("%s (BASIC) on an MFA resource: %d, want 403: %s", c.name, r.status, r.body)
				}
			}
			if r := through(t, base, "PATCH", "/admin/users/1", "application/merge-patch+json", `{"role":null}`, false,
				creds[0].header...); r.status != http.StatusForbidden {
				t.Errorf("merge-patch PATCH with a BASIC session on an MFA resource: %d, want 403: %s", r.status, r.body)
			}

			// No credential, or a bad one: 401, with the gateway's WWW-Authenticate (every
			// proxy) and its problem body (Caddy and Traefik pass the answer through; nginx
			// writes its own page).
			for _, k := range calls {
				r := through(t, base, k.method, k.path, k.ct, k.body, k.chunked, spoofedIdentity...)
				if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s without a credential: %d %v, want 401 with WWW-Authenticate: %s", k.name, r.status, r.header, r.body)
				}
				if px.name != "nginx" && (r.header.Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(r.body, `"type":"/problems/unauthenticated"`)) {
					t.Errorf("%s without a credential through %s: not the gateway's problem: %v %s", k.name, px.name, r.header, r.body)
				}
			}
			for _, bad := range [][]string{{"X-Session-Token", "not-a-session-token"}, {"Cookie", "__Host-hg_session=AAAA"},
				{"Authorization", "Bearer " + minted.Token[:len(minted.Token)-4] + "AAAA"}} {
				if r := through(t, base, "POST", "/orders", "application/json", `{}`, false, bad...); r.status != http.StatusUnauthorized {
					t.Errorf("bad %s: %d, want 401: %s", bad[0], r.status, r.body)
				}
			}
			if n := hits.Load() - before; n != 0 {
				t.Errorf("the upstream saw %d refused requests", n)
			}
		})
	}
}

// TestProxyDocsMatchTheTestedConfigs: the nginx, Caddy and Traefik configurations shown in
// docs/PROXIES.md are, verbatim, the files TestForwardAuthBehindRealProxies runs.
func TestProxyDocsMatchTheTestedConfigs(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "PROXIES.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Fenced code blocks: ```lang, the lines, ```.
	blocks := map[string][]string{}
	lines := strings.SplitAfter(string(page), "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(strings.TrimRight(lines[i], "\n"), "```")
		if !ok || lang == "" {
			continue
		}
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimRight(lines[i], "\n") != "```"; i++ {
			b.WriteString(lines[i])
		}
		blocks[lang] = append(blocks[lang], b.String())
	}
	for file, lang := range map[string]string{"nginx.conf": "nginx", "Caddyfile": "caddyfile", "traefik.yml": "yaml"} {
		want, err := os.ReadFile(filepath.Join("..", "..", "docs", "proxy", file))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, b := range blocks[lang] {
			found = found || b == string(want)
		}
		if !found {
			t.Errorf("docs/PROXIES.md has no ```%s block equal to docs/proxy/%s (the config the proxy test runs): "+
				"paste the file into the page again", lang, file)
		}
	}
}

// TestForwardAuthMFAPathVariants: through every proxy, with a BASIC session, no spelling of
// the MFA-protected /admin prefix reaches the application — other letter case, the bare
// prefix, repeated slashes, dot segments, a path parameter (;), a trailing dot or space,
// percent-encoded letters, dots and slashes — while paths that merely start with the same
// letters (/administrator) or hold admin further down stay at BASIC.
func TestForwardAuthMFAPathVariants(t *testing.T) {
	t.Parallel()
	proxies := provisionedProxies(t)
	gw, admin := realGateway(t, nil)
	app, hits := echoUpstream(t)
	appAddr := strings.TrimPrefix(app.URL, "http://")
	rsp, err := client.Check(apiClient(t, gw, admin).CreateSessionWithResponse(context.Background(),
		client.SessionCreateRequest{UserId: "alice", AuthLevel: client.AuthLevelBASIC}))
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	basic := rsp.JSON201.Token
	recordSecret(basic)

	protected := []string{"/admin/", "/admin/users", "/admin", "/admin?x=1", "/Admin/", "/ADMIN/x", "/aDmIn",
		"/admin;/", "/admin;jsessionid=1/x", "/admin%20/", "/admin%09/", "/admin./", "/admin%2e/", "/admin%2E/x",
		"/admin%2f", "/admin%5c/", "/admin\\x", "//admin/", "///admin/x", "/./admin/", "/x/../admin/",
		"/x/%2e%2e/admin/", "/%61dmin/", "/%2fadmin/", "/%41DMIN/"}
	open := []string{"/administrator", "/adminx/", "/admins/1", "/orders/admin/", "/static/admin.css"}

	for _, px := range proxies {
		t.Run(px.name, func(t *testing.T) {
			base := px.start(t, os.Getenv(px.env), gw, appAddr)
			for _, path := range protected {
				before := hits.Load()
				r := through(t, base, "GET", path, "", "", false, "X-Session-Token", basic)
				if r.status == http.StatusOK || hits.Load() != before {
					t.Errorf("%s with a BASIC session: %d, the application saw %q at level %q (want a refusal, 403)",
						path, r.status, r.echo.URI, r.echo.Level)
				}
			}
			for _, path := range open {
				if r := through(t, base, "GET", path, "", "", false, "X-Session-Token", basic); r.status != http.StatusOK ||
					r.echo.Level != "BASIC" {
					t.Errorf("%s with a BASIC session: %d %s, want 200 at BASIC", path, r.status, r.body)
				}
			}
		})
	}
}

// TestNginxLimitReqExample: the limit_req example of docs/PROXIES.md ("Unauthenticated
// traffic"), added to the documented nginx config as the page says, answers 429 past its burst
// to a client sending random session tokens, before asking the gateway.
func TestNginxLimitReqExample(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(envNginx)
	if bin == "" {
		provisionedProxies(t) // fails under CI=true
		t.Skipf("%s is unset", envNginx)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "PROXIES.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Unauthenticated traffic\n")
	if !ok {
		t.Fatal(`docs/PROXIES.md has no section "Unauthenticated traffic"`)
	}
	var blocks []string
	for rest := section; len(blocks) < 2; {
		var b string
		if _, rest, ok = strings.Cut(rest, "```nginx\n"); !ok {
			t.Fatal("the section shows fewer than two nginx blocks (the http {} and the server {} lines)")
		}
		b, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, b)
	}
	gw, _ := realGateway(t, nil)
	app, hits := echoUpstream(t)
	base := startNginxWith(t, bin, gw, strings.TrimPrefix(app.URL, "http://"), blocks[0], blocks[1])

	counts := map[int]int{}
	for range 100 {
		tok := randomSessionToken(t)
		counts[through(t, base, "GET", "/orders", "", "", false, "X-Session-Token", tok).status]++
	}
	if counts[http.StatusUnauthorized] < 40 || counts[http.StatusTooManyRequests] == 0 ||
		counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != 100 || hits.Load() != 0 {
		t.Errorf("100 random tokens back to back: %v (the application saw %d), want the burst of 40 or more answered 401 "+
			"by the gateway, the rest 429 by nginx", counts, hits.Load())
	}
}

// randomSessionToken is a well-formed session token no session has.
func randomSessionToken(t *testing.T) string {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "hgs_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAA_" + base64.RawURLEncoding.EncodeToString(b[:])
}
