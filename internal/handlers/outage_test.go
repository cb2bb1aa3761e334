package handlers

import (
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Redis stopped → /readyz answers 503 with Retry-After within the configured timeout, and the
// gateway recovers by itself when Redis returns. Redis paused → deadlines still hold.
func TestRedisOutageAndRecovery(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	const timeout = 300 * time.Millisecond
	s := testredis.Open(t, testredis.Backend{Name: "private", Env: testredis.EnvRedis8, URL: srv.URL()},
		func(o *store.Options) { o.Timeout = timeout })
	h := newHarnessOn(t, s, testredis.Prefix(t), nil, nil)

	if rec := h.do("GET", "/readyz", nil); rec.Code != 200 {
		t.Fatalf("readyz before outage: %d %s", rec.Code, rec.Body)
	}
	check503 := func(what string) {
		t.Helper()
		start := time.Now()
		rec := h.do("GET", "/readyz", nil)
		if d := time.Since(start); d > timeout+time.Second {
			t.Fatalf("%s: readyz took %v with a %v timeout", what, d, timeout)
		}
		wantProblem(t, rec, 503, "unavailable")
		if rec.Header().Get("Retry-After") == "" {
			t.Fatalf("%s: 503 without Retry-After", what)
		}
	}

	srv.Pause()
	check503("paused")
	srv.Resume()
	waitReady(t, h)

	srv.Stop()
	for i := 0; i < 3; i++ {
		check503("stopped")
	}
	srv.Start()
	waitReady(t, h)
}

func waitReady(t *testing.T, h *harness) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if rec := h.do("GET", "/readyz", nil); rec.Code == 200 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the gateway did not recover after Redis came back")
}

// TestRedisDownAnswers503Everywhere pins every path by which "Redis cannot serve" reaches a
// caller: the bearer token's revocation check, the session token's check, an operation's own
// Redis call and the readiness probe each answer 503 unavailable with Retry-After and their
// own detail, never 401 or 500.
func TestRedisDownAnswers503Everywhere(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	const timeout = 300 * time.Millisecond
	open := func() *store.Store {
		return testredis.Open(t, testredis.Backend{Name: "private", Env: testredis.EnvRedis8, URL: srv.URL()},
			func(o *store.Options) { o.Timeout = timeout })
	}
	// Sessions without the token check: a signed bearer reaches the operation itself.
	hs, _ := func() (*harness, *testredis.Recorder) {
		var c *testredis.Recorder
		h := newHarnessOn(t, open(), testredis.Prefix(t), nil, func(h *harness, d *Deps) {
			svc, counter := newSessionService(t, h.store, h.prefix, 0)
			d.Sessions, d.SessionAuth, c = svc, svc, counter
			d.TokenCheck = acceptSigned
		})
		return h, c
	}()
	// Tokens with the check (uncached, so the check itself goes to Redis).
	ht := newTokenEnv(t, nil).harness(t, open(), testredis.Prefix(t), tokens.Options{})
	sess := hs.createSession("acme", "alice", nil)
	bearer := ht.bearer("acme", "tokens:read")
	sessBearer := hs.bearer("acme", "sessions:write")

	srv.Stop()
	for _, tt := range []struct {
		name   string
		h      *harness
		method string
		path   string
		body   any
		hdr    []string
		detail string
	}{
		{"bearer check", ht, "GET", "/v1/tokens", nil, []string{"Authorization", bearer}, "Cannot check the token's revocation state."},
		{"session check", hs, "GET", "/v1/session", nil, []string{"Cookie", cookie(sess.Token)}, "Cannot check the session."},
		{"operation", hs, "POST", "/v1/sessions", map[string]any{"userId": "bob", "authLevel": "BASIC"},
			[]string{"Authorization", sessBearer}, "Redis is unreachable, busy or moving data; retry shortly."},
		{"readiness", hs, "GET", "/readyz", nil, nil, "Redis does not answer."},
	} {
		rec := tt.h.do(tt.method, tt.path, tt.body, tt.hdr...)
		p := wantProblem(t, rec, 503, "unavailable")
		if p.Detail != tt.detail {
			t.Errorf("%s: detail %q, want %q", tt.name, p.Detail, tt.detail)
		}
		if rec.Header().Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q", tt.name, rec.Header().Get("Retry-After"))
		}
	}
}
