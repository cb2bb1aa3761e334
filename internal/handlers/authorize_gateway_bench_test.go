package handlers

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/telemetry/redistrace"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthorizeGateway is GET /v1/authorize by session token through the gateway as
// cmd/gateway builds it: the documented configuration defaults (broadcast tracking, the memo,
// GATEWAY_REDIS_TIMEOUT's per-call deadline), telemetry on (metrics recorded, rueidisotel
// around the Redis client; no span exporter, as without OTEL_TRACES_EXPORTER), on standalone
// Redis 8. Two cases, the two paths the scale benchmark's requests take:
//
//	hit   the session is in the memo: no round trip
//	miss  64 sessions (of 64 users) in turn and a memo of one (GATEWAY_SESSION_CACHE_ENTRIES=1),
//	      so at least 63 of 64 requests read the session from Redis (one pipeline)
//	zipf  20,000 sessions (of 20,000 users), each served once before the timer starts, then drawn
//	      from Zipf(s = 1.1) as the scale benchmark draws them: memo hits over a working set
//	      that does not fit the CPU's caches (the 1M-session row's hot path)
//
// Requests run in parallel (GOMAXPROCS goroutines, 8 per CPU for a miss, whose round trips
// overlap). cpu-ns/op is the process's CPU time (user + system, every goroutine: rueidis'
// reader and writer, the GC) per request: what the gateway spends on one, Redis's own work
// aside; ns/op is wall time per request. The HTTP connection's own read and write are not in
// it (httptest).
//
//	source .cache/redis/env.sh && go test -run '^$' -bench BenchmarkAuthorizeGateway -benchmem ./internal/handlers/
func BenchmarkAuthorizeGateway(b *testing.B) {
	be := testredis.Named(b, "redis8")
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "hashgate-bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	for _, c := range []struct {
		name    string
		entries int
		users   int
	}{{"hit", 0, 1}, {"miss", 1, 64}, {"zipf", 0, zipfUsers}} {
		b.Run(c.name, func(b *testing.B) {
			if c.entries > 0 {
				b.SetParallelism(8)
			}
			prefix := testredis.Prefix(b)
			cfg, err := config.Load(func(string) string { return "" })
			if err != nil {
				b.Fatal(err)
			}
			s := testredis.Open(b, be, be.Tracking(prefix), func(o *store.Options) {
				o.NewClient, o.Timeout = redistrace.For(tel), cfg.RedisTimeout
			})
			h := newHarnessWith(b, s, TestGateway{Prefix: prefix, Telemetry: tel, Config: func(cfg *config.Config) {
				if c.entries > 0 {
					cfg.SessionCacheEntries = c.entries
				}
				if c.users > 1 && c.entries == 0 {
					// Kept through a long set-up on a busy machine (20,000 creations).
					cfg.SessionCacheTTL = time.Minute
				}
			}}, nil)
			svc, ok := h.srv.SessionAuth.(*sessions.Service)
			if !ok {
				b.Fatalf("session authenticator is a %T", h.srv.SessionAuth)
			}
			create := func(user string) string {
				for try := 0; ; try++ { // (a busy shared machine can time a create out)
					is, err := svc.Create(context.Background(), "acme", sessions.CreateInput{UserID: user, AuthLevel: "BASIC"})
					if err == nil {
						return is.Token
					}
					if try == 5 {
						b.Fatal(err)
					}
				}
			}
			serve := func(b *testing.B, token, user string) {
				req := httptest.NewRequest("GET", "/v1/authorize", nil)
				req.Header.Set(SessionHeaderName, token)
				rec := httptest.NewRecorder()
				h.e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || rec.Header().Get("X-Auth-Subject") != user {
					b.Fatalf("authorize: %d %v %s", rec.Code, rec.Header(), rec.Body)
				}
			}
			users := []string{"alice"}
			for i := range c.users - 1 {
				users = append(users, "user"+strconv.Itoa(i))
			}
			tokens := make([]string, len(users))
			parallel(len(users), func(i int) { tokens[i] = create(users[i]) })
			for i, tok := range tokens {
				serve(b, tok, users[i])
			}
			if c.users == 1 {
				// Served until a request is a memo hit: a fill is dropped when the create's
				// invalidation push arrives after the read began.
				for i := 0; ; i++ {
					before, _ := svc.CacheStats()
					serve(b, tokens[0], users[0])
					if hits, _ := svc.CacheStats(); hits > before {
						break
					}
					if i == 100 {
						b.Fatal("the session never stays in the memo")
					}
				}
			}
			hits0, misses0 := svc.CacheStats()
			b.ReportAllocs()
			cpu := processCPU()
			b.ResetTimer()
			draw := func(i uint64) uint64 { return i % uint64(len(tokens)) }
			if c.name == "zipf" {
				order := zipfOrder(len(tokens))
				draw = func(i uint64) uint64 { return order[i%uint64(len(order))] }
			}
			var next atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					j := draw(next.Add(1))
					serve(b, tokens[j], users[j])
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			hits, misses := svc.CacheStats()
			hits, misses = hits-hits0, misses-misses0
			// Nearly all hits or nearly all misses: a miss run keeps at most one of its 64
			// sessions (which one can change when Redis's tracking restarts, dropping all).
			if hit := c.entries == 0; b.N >= 1000 && (hit && misses > 1+hits/16 || !hit && hits > 1+misses/16) {
				b.Fatalf("memo during the run: %d hits, %d misses", hits, misses)
			}
		})
	}
}

// zipfUsers is the zipf case's number of sessions.
const zipfUsers = 20000

// zipfOrder is 200,000 draws of Zipf(s = 1.1) over n ranks, the ranks a fixed permutation of
// the indexes (as cmd/bench's scale rows draw).
func zipfOrder(n int) []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(n)
	z := rand.NewZipf(rng, 1.1, 1, uint64(n-1))
	out := make([]uint64, 200000)
	for i := range out {
		out[i] = uint64(perm[z.Uint64()])
	}
	return out
}

// parallel calls f(0..n-1) from 8 goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// processCPU is the process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
