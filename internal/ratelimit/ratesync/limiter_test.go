package ratesync

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newLimiter(t *testing.T, s *store.Store, prefix string, h *keyhash.Hasher, o Options) *Limiter {
	t.Helper()
	l, err := New(s, prefix, h, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// run starts l's flush loop for the test's life.
func run(t *testing.T, l *Limiter) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// hammer sends n requests from workers goroutines through l and returns how many were admitted.
func hammer(l *Limiter, workers, n int, reqs ...ratelimit.Request) int64 {
	var admitted, left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, ok := l.Take(context.Background(), reqs...); ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return admitted.Load()
}

// One replica admits exactly the limit, however many requests race for it, and Redis ends up
// holding exactly what it admitted.
func TestSyncExactWithOneReplica(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		h, _, _ := keyhash.Generate()
		l := newLimiter(t, s, prefix, h, Options{FlushInterval: 5 * time.Millisecond})
		run(t, l)
		p := &ratelimit.Policy{Name: "token", Limit: 137, Window: time.Hour}
		if got := hammer(l, 64, 1000, ratelimit.Request{Policy: p, ID: "tok-1"}); got != int64(p.Limit) {
			t.Fatalf("admitted %d of 1000, want exactly %d", got, p.Limit)
		}
		if err := l.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		key := ratelimit.Key(prefix, h.Tag("rl", 9, "token", "tok-1"), "token")
		n, err := s.Client.Do(context.Background(), s.Client.B().Hget().Key(key).Field("count").Build()).AsInt64()
		if err != nil || n != int64(p.Limit) {
			t.Fatalf("Redis holds %d (%v), want %d", n, err, p.Limit)
		}
		if ttl, _ := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64(); ttl <= 0 {
			t.Fatalf("counter without a TTL: %d", ttl)
		}
		// The identifier never reaches a key.
		if strings.Contains(key, "tok-1") {
			t.Fatalf("raw identifier in %s", key)
		}
	})
}

// A request counts against every counter it names or none: refused by its tenant, it does not
// use up its token's budget; the decisions carry each policy's count and reset.
func TestSyncAllOrNothing(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h, _, _ := keyhash.Generate()
	l := newLimiter(t, s, testredis.Prefix(t), h, Options{})
	tok := &ratelimit.Policy{Name: "token", Limit: 10, Window: time.Minute}
	ten := &ratelimit.Policy{Name: "tenant", Limit: 3, Window: time.Minute}
	ctx := context.Background()
	for i := range 3 {
		ds, ok := l.Take(ctx, ratelimit.Request{Policy: tok, ID: "a"}, ratelimit.Request{Policy: ten, ID: "acme"})
		if !ok || len(ds) != 2 || ds[0].Count != i+1 || ds[1].Count != i+1 || ds[1].Reset <= 0 || ds[1].Reset > time.Minute {
			t.Fatalf("request %d: %v %+v", i, ok, ds)
		}
	}
	ds, ok := l.Take(ctx, ratelimit.Request{Policy: tok, ID: "a"}, ratelimit.Request{Policy: ten, ID: "acme"})
	if ok || !ds[0].Allowed || ds[1].Allowed {
		t.Fatalf("over the tenant's limit: %v %+v", ok, ds)
	}
	e, isProblem := apperr.As(ratelimit.Refusal(ds))
	if !isProblem || e.Kind != apperr.RateLimited || e.RetryAfter < time.Second || !strings.Contains(e.Detail, "tenant") ||
		e.Headers["RateLimit"] != `"token";r=7;t=`+e.Headers["RateLimit"][len(`"token";r=7;t=`):] {
		t.Fatalf("refusal %+v", e)
	}
	if ds, ok := l.Take(ctx, ratelimit.Request{Policy: tok, ID: "a"}); !ok || ds[0].Count != 4 {
		t.Fatalf("the refused request used the token's budget: %+v", ds)
	}
}

// Redis down: the limiter still answers from memory and keeps enforcing the limit on what this
// replica admitted; the counts are kept and reach Redis once it answers again.
func TestSyncWithoutRedis(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	s, err := store.Open(context.Background(), store.Options{URL: srv.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h, _, _ := keyhash.Generate()
	l := newLimiter(t, s, testredis.Prefix(t), h, Options{})
	p := &ratelimit.Policy{Name: "token", Limit: 20, Window: time.Hour}
	ctx := context.Background()
	srv.Stop()
	if got := hammer(l, 8, 15, ratelimit.Request{Policy: p, ID: "x"}); got != 15 {
		t.Fatalf("admitted %d with Redis down, want 15", got)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := l.Flush(fctx); err == nil {
		t.Fatal("flush to a stopped Redis succeeded")
	}
	cancel()
	if got := hammer(l, 8, 15, ratelimit.Request{Policy: p, ID: "x"}); got != 5 {
		t.Fatalf("admitted %d more with Redis down, want 5 (the limit holds locally)", got)
	}
	srv.Start()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := l.Flush(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("flush after restart: %v", err)
		}
	}
	key := ratelimit.Key(l.prefix, h.Tag("rl", 9, "token", "x"), "token")
	if n, err := s.Client.Do(ctx, s.Client.B().Hget().Key(key).Field("count").Build()).AsInt64(); err != nil || n != 20 {
		t.Fatalf("Redis holds %d (%v) after the restart, want the 20 admitted", n, err)
	}
}

// Several replicas share a limit through Redis: pushed together at three times the limit, they
// admit at most the limit × (1 + ε) with the default sync share. The flushes are driven by the
// replicas themselves (what Run does on a kick, and a flush every 25 requests standing in for
// the interval), so the bound tested is the algorithm's, not the scheduler's; the same over
// HTTP with Run's own loop is internal/app's TestRateLimitAcrossThreeReplicas.
func TestSyncReplicasShareTheLimit(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if b.Name == "embedded" {
			t.Skip("replicas need a shared Redis")
		}
		h, _, _ := keyhash.Generate()
		p := &ratelimit.Policy{Name: "tenant", Limit: 1500, Window: time.Hour}
		var ls []*Limiter
		for range 3 {
			ls = append(ls, newLimiter(t, testredis.Open(t, b), prefix, h, Options{}))
		}
		var total atomic.Int64
		var wg sync.WaitGroup
		ctx := context.Background()
		for _, l := range ls {
			wg.Go(func() {
				for i := range p.Limit {
					if _, ok := l.Take(ctx, ratelimit.Request{Policy: p, ID: "acme"}); ok {
						total.Add(1)
					}
					flush := i%25 == 24
					select {
					case <-l.kick:
						flush = true
					default:
					}
					if flush {
						if err := l.Flush(ctx); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
		wg.Wait()
		eps := float64(total.Load()-int64(p.Limit)) / float64(p.Limit)
		t.Logf("%s: 3 replicas admitted %d of %d pushed, limit %d: ε = %.3f", b.Name, total.Load(), 3*p.Limit, p.Limit, eps)
		if total.Load() < int64(p.Limit) || eps > 0.10 {
			t.Fatalf("admitted %d, want within [%d, %d]", total.Load(), p.Limit, p.Limit*11/10)
		}
	})
}

// Redis that accepts and never answers (a paused server; in a cluster, a crashed master's
// address that still accepts): a flush, called as Run calls it (a context with no deadline),
// gives up within the store's timeout and keeps its counts, so the next one sends them once
// Redis answers. A flush that waited for ever stopped every later one: each replica then
// enforced the limit on its own admissions only, n × limit across n replicas.
func TestFlushBoundedWhenRedisHangs(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	s, err := store.Open(context.Background(), store.Options{URL: srv.URL(), Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h, _, _ := keyhash.Generate()
	l := newLimiter(t, s, testredis.Prefix(t), h, Options{})
	p := &ratelimit.Policy{Name: "tenant", Limit: 20, Window: time.Hour}
	ctx := context.Background()
	if got := hammer(l, 4, 7, ratelimit.Request{Policy: p, ID: "acme"}); got != 7 {
		t.Fatalf("admitted %d, want 7", got)
	}
	srv.Pause()
	t.Cleanup(srv.Resume)
	done := make(chan error, 1)
	go func() { done <- l.Flush(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("flush to a paused Redis succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("flush to a paused Redis still waiting after 5s (store timeout 300ms)")
	}
	srv.Resume()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := l.Flush(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("flush after resume: %v", err)
		}
	}
	key := ratelimit.Key(l.prefix, h.Tag("rl", 9, "tenant", "acme"), "tenant")
	if n, err := s.Client.Do(ctx, s.Client.B().Hget().Key(key).Field("count").Build()).AsInt64(); err != nil || n != 7 {
		t.Fatalf("Redis holds %d (%v) after the resume, want the 7 admitted", n, err)
	}
}

// A node without the script (a promoted replica, a restarted server: SCRIPT FLUSH here) answers
// the flush's EVALSHA with NOSCRIPT; the flush runs the script again with EVAL and succeeds.
func TestFlushAfterScriptFlush(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t) // a server of its own: SCRIPT FLUSH reaches every client
	s, err := store.Open(context.Background(), store.Options{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h, _, _ := keyhash.Generate()
	prefix := testredis.Prefix(t)
	l := newLimiter(t, s, prefix, h, Options{})
	p := &ratelimit.Policy{Name: "tenant", Limit: 20, Window: time.Hour}
	ctx := context.Background()
	if err := s.LoadScripts(ctx, ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	hammer(l, 2, 3, ratelimit.Request{Policy: p, ID: "acme"})
	if err := s.Client.Do(ctx, s.Client.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatalf("flush after SCRIPT FLUSH: %v", err)
	}
	key := ratelimit.Key(prefix, h.Tag("rl", 9, "tenant", "acme"), "tenant")
	if n, err := s.Client.Do(ctx, s.Client.B().Hget().Key(key).Field("count").Build()).AsInt64(); err != nil || n != 3 {
		t.Fatalf("Redis holds %d (%v), want 3", n, err)
	}
}
