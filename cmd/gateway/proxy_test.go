package main

// Forward auth behind the real reverse proxies: nginx (auth_request) and Caddy (forward_auth)
// from Debian's packages (scripts/proxy-env.sh provisions them; scripts/test.sh exports
// HASHGATE_TEST_NGINX and HASHGATE_TEST_CADDY), each started on loopback with the config
// documented in docs/PROXIES.md (docs/proxy/*, placeholders filled in), in front of a small
// upstream that echoes what it received, with the whole gateway (serve) on real Redis 8.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashgate/hashgate/client"
	"github.com/hashgate/hashgate/internal/testredis"
)

const (
	envNginx = "HASHGATE_TEST_NGINX"
	envCaddy = "HASHGATE_TEST_CADDY"
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
	// AuthHeaders counts X-Auth-* header lines: each must arrive once, from the gateway.
	AuthHeaders int `json:"authHeaders"`
}

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
		for k, vs := range r.Header {
			if strings.HasPrefix(k, "X-Auth-") {
				n += len(vs)
			}
		}
		e := echoed{Method: r.Method, URI: r.RequestURI, ContentType: r.Header.Get("Content-Type"), Body: string(b),
			Subject: r.Header.Get("X-Auth-Subject"), Tenant: r.Header.Get("X-Auth-Tenant"), Level: r.Header.Get("X-Auth-Level"),
			Session: r.Header.Get("X-Auth-Session"), Scopes: r.Header.Get("X-Auth-Scopes"), AuthHeaders: n}
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
	env = map[string]string{"REDIS_URL": url, "GATEWAY_KEY_PREFIX": testredis.Prefix(t), "GATEWAY_BOOTSTRAP_TOKEN_FILE": tokenFile}
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

// freeLoopbackPort is a port the kernel just handed out on 127.0.0.1 (the proxies cannot
// listen on port 0 and report it); startProxy retries when another process took it meanwhile.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).AddrPort().String()
}

// proxyProc is a running proxy process started by the test.
type proxyProc struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func (p *proxyProc) logs() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// startProxy starts command (built by mk for a listen address) and waits until the address
// accepts connections; it is stopped (TERM, then KILL) at cleanup. A start that fails because
// the port was taken is retried on another port.
func startProxy(t *testing.T, mk func(listen string) *exec.Cmd, logFile string) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		listen := freeLoopbackPort(t)
		cmd := mk(listen)
		f, err := os.Create(logFile)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			f.Close()
			t.Fatalf("start %s: %v", cmd.Path, err)
		}
		f.Close()
		p := &proxyProc{cmd: cmd, done: make(chan error, 1), log: logFile}
		go func() { p.done <- cmd.Wait() }()
		if err := waitListening(listen, p.done); err != nil {
			stopProxy(t, p)
			if attempt < 3 && strings.Contains(p.logs(), "address already in use") {
				continue
			}
			t.Fatalf("%s did not start: %v\n%s", filepath.Base(cmd.Path), err, p.logs())
		}
		t.Cleanup(func() {
			stopProxy(t, p)
			if t.Failed() {
				t.Logf("%s log:\n%s", filepath.Base(cmd.Path), p.logs())
			}
		})
		return listen
	}
}

func waitListening(addr string, done <-chan error) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("not listening after 15s")
}

// stopProxy ends the process the test started (by its pid): TERM, and KILL after 10s.
func stopProxy(t *testing.T, p *proxyProc) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s ignored SIGTERM; killing it", filepath.Base(p.cmd.Path))
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// startNginx runs nginx in the foreground with its own prefix, pid file, temp paths and logs in
// a temp dir; the server block is docs/proxy/nginx.conf, included from the http block.
func startNginx(t *testing.T, bin, gateway, app string) string {
	t.Helper()
	dir := t.TempDir()
	return startProxy(t, func(listen string) *exec.Cmd {
		site := proxyConfig(t, "nginx.conf", map[string]string{"@LISTEN@": listen, "@GATEWAY@": gateway, "@APP@": app})
		if err := os.WriteFile(filepath.Join(dir, "hashgate.conf"), []byte(site), 0o600); err != nil {
			t.Fatal(err)
		}
		main := fmt.Sprintf(`daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 256; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/hashgate.conf;
}
`, dir)
		if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
			t.Fatal(err)
		}
		return exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"))
	}, filepath.Join(dir, "stderr.log"))
}

// startCaddy runs `caddy run` with the site of docs/proxy/Caddyfile, the admin endpoint off,
// and HOME and the XDG directories in a temp dir.
func startCaddy(t *testing.T, bin, gateway, app string) string {
	t.Helper()
	dir := t.TempDir()
	return startProxy(t, func(listen string) *exec.Cmd {
		site := proxyConfig(t, "Caddyfile", map[string]string{"@LISTEN@": listen, "@GATEWAY@": gateway, "@APP@": app})
		conf := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(conf, []byte("{\n\tadmin off\n\tauto_https off\n}\n\n"+site), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
			"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		return cmd
	}, filepath.Join(dir, "caddy.log"))
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
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
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
// chunked JSON POST) reach the upstream through nginx and through Caddy with the identity in
// X-Auth-Subject, X-Auth-Tenant and X-Auth-Level, for a session cookie, an X-Session-Token
// and a bearer token; a client's own X-Auth-* headers never get through; no or a bad
// credential is 401 and an MFA resource asked with a BASIC session (or a bearer) is 403,
// without the upstream seeing the request.
func TestForwardAuthBehindRealProxies(t *testing.T) {
	t.Parallel()
	proxies := []struct {
		name, env string
		start     func(t *testing.T, bin, gateway, app string) string
	}{
		{"nginx", envNginx, startNginx},
		{"caddy", envCaddy, startCaddy},
	}
	var missing []string
	for _, p := range proxies {
		if os.Getenv(p.env) == "" {
			missing = append(missing, p.env)
		}
	}
	if len(missing) == len(proxies) {
		t.Skipf("%s unset: run scripts/test.sh (scripts/proxy-env.sh provisions nginx-light and caddy from Debian's packages)",
			strings.Join(missing, ", "))
	}
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
		name                     string
		header                   []string
		subject, session, scopes string
	}
	creds := []cred{
		{"cookie", []string{"Cookie", "__Host-hg_session=" + basic.Token}, "alice", basic.SessionId, ""},
		{"X-Session-Token", []string{"X-Session-Token", basic.Token}, "alice", basic.SessionId, ""},
		{"bearer", []string{"Authorization", "Bearer " + minted.Token}, "svc-frontend", "", "quotes:read"},
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
	// A client's own identity headers, which must never reach the application.
	spoof := []string{"X-Auth-Subject", "mallory", "X-Auth-Tenant", "other", "X-Auth-Level", "MFA",
		"X-Auth-Session", "s_forged", "X-Auth-Scopes", "tokens:write"}

	for _, px := range proxies {
		t.Run(px.name, func(t *testing.T) {
			bin := os.Getenv(px.env)
			if bin == "" {
				t.Skipf("%s is unset: scripts/proxy-env.sh could not provision %s", px.env, px.name)
			}
			base := px.start(t, bin, gw, appAddr)

			for _, c := range creds {
				for _, k := range calls {
					hdr := append(append([]string{}, c.header...), spoof...)
					r := through(t, base, k.method, k.path, k.ct, k.body, k.chunked, hdr...)
					want := echoed{Method: k.method, URI: k.path, ContentType: k.ct, Body: k.body, Subject: c.subject,
						Tenant: "default", Level: "BASIC", Session: c.session, Scopes: c.scopes}
					want.AuthHeaders = 3
					if c.session != "" {
						want.AuthHeaders++
					}
					if c.scopes != "" {
						want.AuthHeaders++
					}
					if r.status != http.StatusOK || r.echo != want {
						t.Errorf("%s with %s: %d %s\n got  %+v\n want %+v", k.name, c.name, r.status, strings.TrimSpace(r.body), r.echo, want)
					}
				}
			}

			// Level MFA: the MFA session passes, a BASIC session and a bearer are refused.
			r := through(t, base, "POST", "/admin/users", "application/json", `{"role":"admin"}`, false,
				"X-Session-Token", mfa.Token)
			if want := (echoed{Method: "POST", URI: "/admin/users", ContentType: "application/json", Body: `{"role":"admin"}`,
				Subject: "bob", Tenant: "default", Level: "MFA", Session: mfa.SessionId, AuthHeaders: 4}); r.status != 200 || r.echo != want {
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

			// No credential, or a bad one: 401, with the gateway's WWW-Authenticate (both
			// proxies) and its problem body (Caddy passes the answer through; nginx writes its
			// own page).
			for _, k := range calls {
				r := through(t, base, k.method, k.path, k.ct, k.body, k.chunked, spoof...)
				if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s without a credential: %d %v, want 401 with WWW-Authenticate: %s", k.name, r.status, r.header, r.body)
				}
				if px.name == "caddy" && (r.header.Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(r.body, `"type":"/problems/unauthenticated"`)) {
					t.Errorf("%s without a credential through Caddy: not the gateway's problem: %v %s", k.name, r.header, r.body)
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

// TestProxyDocsMatchTheTestedConfigs: the nginx and Caddy configurations shown in
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
	for file, lang := range map[string]string{"nginx.conf": "nginx", "Caddyfile": "caddyfile"} {
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
