package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// harness drives the whole Echo stack in-process (validator, authentication, error handler)
// over a store on one backend, with a unique key prefix.
type harness struct {
	t      testing.TB
	e      *echo.Echo
	srv    *Server
	store  *store.Store
	auth   *auth.Authority
	hasher *keyhash.Hasher // the HMAC key of the gateway's services
	prefix string
	// mint issues a bearer token for tenant with scopes, with its revocation metadata when the
	// token service is the real one (signing only otherwise).
	mint func(tenant string, scopes ...string) string
}

// TestGateway is what a harness asks internal/app for besides the store.
type TestGateway struct {
	Prefix    string
	Auth      *auth.Authority // nil: fresh keys
	Hasher    *keyhash.Hasher // nil: a fresh key
	Telemetry *telemetry.Telemetry
	Config    func(*config.Config) // adjusts the gateway's configuration defaults
	Override  func(*Deps)          // wraps or replaces a service before the server is built
}

// BuildGatewayForTest is internal/app's constructor, set by gateway_test.go (package
// handlers_test): this package cannot import internal/app, which imports it. Every harness
// builds its gateway through it.
var BuildGatewayForTest func(s *store.Store, g TestGateway) (*Server, *echo.Echo, error)

// newHarness opens b and builds the whole gateway over it; configure, when set, replaces or
// wraps services (it sees the harness's store and prefix).
func newHarness(t testing.TB, b testredis.Backend, configure func(h *harness, d *Deps)) *harness {
	t.Helper()
	s := testredis.Open(t, b)
	return newHarnessOn(t, s, testredis.Prefix(t), nil, configure)
}

func newHarnessOn(t testing.TB, s *store.Store, prefix string, tel *telemetry.Telemetry, configure func(h *harness, d *Deps)) *harness {
	t.Helper()
	return newHarnessWith(t, s, TestGateway{Prefix: prefix, Telemetry: tel}, configure)
}

// newHarnessWith builds the gateway over s as g asks; configure, when set, replaces or wraps
// services.
func newHarnessWith(t testing.TB, s *store.Store, g TestGateway, configure func(h *harness, d *Deps)) *harness {
	t.Helper()
	if g.Hasher == nil {
		var err error
		if g.Hasher, _, err = keyhash.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, store: s, prefix: g.Prefix, hasher: g.Hasher}
	g.Override = func(d *Deps) {
		if configure != nil {
			configure(h, d)
		}
	}
	var err error
	h.srv, h.e, err = BuildGatewayForTest(s, g)
	if err != nil {
		t.Fatal(err)
	}
	h.auth = h.srv.Auth
	if h.srv.EventStream.MaxDuration == 0 {
		// The generic walks answer GET /v1/events/stream into a recorder that never hangs up.
		h.srv.EventStream.MaxDuration = 50 * time.Millisecond
	}
	h.mint = func(tenant string, scopes ...string) string {
		return testauth.Mint(t, h.auth, tenant, scopes...)
	}
	// Bearer tokens get their revocation metadata too, so they pass the token check like
	// tokens issued through the API.
	if ts, ok := h.srv.Tokens.(*tokens.Service); ok {
		h.mint = func(tenant string, scopes ...string) string {
			out, err := ts.Mint(context.Background(), tokens.MintRequest{Tenant: tenant, Subject: testauth.Subject,
				Scopes: scopes, TTL: time.Hour, TokenType: tokens.TypeService})
			if err != nil {
				t.Fatalf("mint: %v", err)
			}
			return out.Token
		}
	}
	return h
}

// acceptSigned is a token check that accepts every correctly signed token without reading
// Redis: for tests that count the Redis commands of an operation other than the check.
var acceptSigned auth.Checker = acceptAll{}

type acceptAll struct{}

func (acceptAll) Check(context.Context, *auth.Claims) error { return nil }

// bearer returns "Bearer <token>" for tenant with scopes.
func (h *harness) bearer(tenant string, scopes ...string) string {
	tok := h.mint(tenant, scopes...)
	writeSecrets("token " + tok)
	return "Bearer " + tok
}

// do sends a request; body may be nil, a string/[]byte (sent as is) or a value (JSON).
// headers are name, value pairs; Content-Type defaults to application/json when a body is set.
func (h *harness) do(method, path string, body any, headers ...string) *httptest.ResponseRecorder {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req = req.WithContext(context.Background())
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, req)
	recordSecrets(rec.Body.Bytes())
	return rec
}

// decode unmarshals the response body into v.
func decode(t testing.TB, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("decode %q: %v", rec.Body.String(), err)
	}
}

// problem is a decoded RFC 9457 body.
type problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	RequestID  string `json:"requestId"`
	RetryAfter int    `json:"retryAfter"`
	Errors     []struct {
		Pointer   string `json:"pointer"`
		Parameter string `json:"parameter"`
		Detail    string `json:"detail"`
	} `json:"errors"`
	AttemptsLeft *int `json:"attemptsLeft"`
}

// wantProblem asserts rec is a problem+json with status and, when slug is set, that type.
func wantProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, slug string) problem {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type = %q; body %s", ct, rec.Body.String())
	}
	var p problem
	decode(t, rec, &p)
	if p.Status != status || p.Title == "" || p.Type == "" {
		t.Fatalf("problem = %+v", p)
	}
	if slug != "" && !strings.HasSuffix(p.Type, "/"+slug) {
		t.Fatalf("problem type = %q, want slug %q (detail %q)", p.Type, slug, p.Detail)
	}
	return p
}

// recordSecrets appends every token and MFA code a response hands out to the file named by
// HASHGATE_SECRETS_FILE, so the keyspace audit after the suite (cmd/keyaudit) can prove none
// of them reached Redis.
func recordSecrets(body []byte) {
	path := os.Getenv("HASHGATE_SECRETS_FILE")
	if path == "" || !bytes.Contains(body, []byte(`"token"`)) && !bytes.Contains(body, []byte(`"code"`)) && !bytes.Contains(body, []byte(`"secret"`)) {
		return
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return
	}
	var lines []string
	if v, ok := m["token"].(string); ok && v != "" {
		lines = append(lines, "token "+v)
	}
	if v, ok := m["code"].(string); ok && v != "" {
		lines = append(lines, "code "+v)
	}
	if v, ok := m["secret"].(string); ok && v != "" {
		lines = append(lines, "secret "+v, "secret "+strings.TrimPrefix(v, "whsec_"))
	}
	writeSecrets(lines...)
}

// writeSecrets appends `kind value` lines to HASHGATE_SECRETS_FILE when it is set.
func writeSecrets(lines ...string) {
	path := os.Getenv("HASHGATE_SECRETS_FILE")
	if path == "" || len(lines) == 0 {
		return
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(strings.Join(lines, "\n") + "\n")
}

var secretsMu sync.Mutex
