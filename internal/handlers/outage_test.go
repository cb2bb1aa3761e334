package handlers

import (
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
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
