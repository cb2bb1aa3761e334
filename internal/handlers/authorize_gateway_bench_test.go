package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthorizeGateway is GET /v1/authorize by session token through the gateway as
// cmd/gateway builds it: the documented configuration defaults (broadcast tracking, the memo,
// GATEWAY_REDIS_TIMEOUT's per-call deadline), telemetry on (metrics recorded, rueidisotel
// around the Redis client; no span exporter, as without OTEL_TRACES_EXPORTER), on standalone
// Redis 8. Two cases, the two paths the scale benchmark's requests take:
//
//	hit   the session is in the memo: no round trip
//	miss  the memo is full (GATEWAY_SESSION_CACHE_ENTRIES=1, held by another session), so
//	      every request reads the session from Redis (one pipeline)
//
// Requests run in parallel (GOMAXPROCS goroutines, 8 per CPU for a miss, whose round trips
// overlap). cpu-ns/op is the process's CPU time (user + system, every goroutine: rueidis'
// reader and writer, the GC) per request: what the gateway spends on one, Redis's own work
// aside; ns/op is wall time per request. The HTTP connection's own read and write are not in
// it (httptest).
//
//	source .cache/redis/env.sh && go test -run '^$' -bench BenchmarkAuthorizeGateway -benchmem ./internal/handlers/
func BenchmarkAuthorizeGateway(b *testing.B) {
	var be testredis.Backend
	for _, x := range testredis.Backends() {
		if x.Name == "redis8" {
			be = x
		}
	}
	if be.URL == "" {
		b.Skip("no redis8 backend")
	}
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
				o.NewClient, o.Timeout = tel.RedisClient, cfg.RedisTimeout
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
			// kept serves token until a request is a memo hit: a fill is dropped when the
			// create's invalidation push arrives after the read began.
			kept := func(token, user string) {
				for i := 0; ; i++ {
					before, _ := svc.CacheStats()
					serve(b, token, user)
					if hits, _ := svc.CacheStats(); hits > before {
						return
					}
					if i == 100 {
						b.Fatalf("%s's session never stays in the memo", user)
					}
				}
			}
			token := create("alice")
			if c.entries > 0 {
				kept(create("bob"), "bob") // takes the memo's one entry
				serve(b, token, "alice")
			} else {
				kept(token, "alice")
			}
			before, _ := svc.CacheStats()
			b.ReportAllocs()
			cpu := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					serve(b, token, "alice")
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			hits, _ := svc.CacheStats()
			if got, want := hits-before > 0, c.entries == 0; got != want {
				b.Fatalf("memo hits during the run: %d (want hits: %v)", hits-before, want)
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
