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
	prefix string
	// mint issues a bearer token for tenant with scopes. It defaults to signing only; a test
	// that wires revocation metadata replaces it with one that writes the metadata too.
	mint func(tenant string, scopes ...string) string
}

// newHarness opens b, builds an Authority and a server; configure fills in domain services.
func newHarness(t testing.TB, b testredis.Backend, configure func(h *harness, d *Deps)) *harness {
	t.Helper()
	s := testredis.Open(t, b)
	return newHarnessOn(t, s, testredis.Prefix(t), nil, configure)
}

func newHarnessOn(t testing.TB, s *store.Store, prefix string, tel *telemetry.Telemetry, configure func(h *harness, d *Deps)) *harness {
	t.Helper()
	a := testauth.New(t, auth.Options{})
	h := &harness{t: t, store: s, auth: a, prefix: prefix}
	h.mint = func(tenant string, scopes ...string) string {
		return testauth.Mint(t, a, tenant, scopes...)
	}
	d := Deps{Store: s, Caps: s.Caps, Auth: a, Version: "test", Spec: []byte("openapi: 3.0.3\n"), RetryAfter: time.Second}
	if configure != nil {
		configure(h, &d)
	}
	if d.Auth != nil {
		h.auth = d.Auth
	}
	// With a token service wired, bearer tokens get their revocation metadata too, so they
	// pass the token check like tokens issued through the API.
	if ts, ok := d.Tokens.(*tokens.Service); ok {
		h.mint = func(tenant string, scopes ...string) string {
			out, err := ts.Mint(context.Background(), tokens.MintRequest{Tenant: tenant, Subject: testauth.Subject,
				Scopes: scopes, TTL: time.Hour, TokenType: tokens.TypeService})
			if err != nil {
				t.Fatalf("mint: %v", err)
			}
			return out.Token
		}
	}
	h.srv = NewServer(d)
	var err error
	h.e, err = NewEcho(h.srv, tel)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

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
	if path == "" || !bytes.Contains(body, []byte(`"token"`)) && !bytes.Contains(body, []byte(`"code"`)) {
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
