package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
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
	}{{"hit", 0}, {"miss", 1}} {
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
			}}, nil)
			svc, ok := h.srv.SessionAuth.(*sessions.Service)
			if !ok {
				b.Fatalf("session authenticator is a %T", h.srv.SessionAuth)
			}
			create := func(user string) string {
				is, err := svc.Create(context.Background(), "acme", sessions.CreateInput{UserID: user, AuthLevel: "BASIC"})
				if err != nil {
					b.Fatal(err)
				}
				return is.Token
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
			if c.entries > 0 {
				for i := range 63 {
					users = append(users, "user"+strconv.Itoa(i))
				}
			}
			tokens := make([]string, len(users))
			for i, u := range users {
				tokens[i] = create(u)
				serve(b, tokens[i], u)
			}
			if c.entries == 0 {
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
			var next atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					j := next.Add(1) % uint64(len(tokens))
					serve(b, tokens[j], users[j])
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			hits, misses := svc.CacheStats()
			hits, misses = hits-hits0, misses-misses0
			// Nearly all hits or nearly all misses: a miss run keeps at most one of its 64
			// sessions (which one can change when Redis's tracking restarts, dropping all).
			if hit := c.entries == 0; hit && misses > 1+hits/16 || !hit && hits > 1+misses/16 {
				b.Fatalf("memo during the run: %d hits, %d misses", hits, misses)
			}
		})
	}
}

// processCPU is the process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
