package handlers

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthorize measures GET /v1/authorize through the whole Echo stack (request id,
// telemetry middleware, spec validation and authentication, the handler, the renderer) on
// every backend the run provides, with GET /healthz through the same stack as the baseline.
// redis-cmds/op is the number of Redis commands each request sent.
//
//	go test -run '^$' -bench BenchmarkAuthorize ./internal/handlers/
func BenchmarkAuthorize(b *testing.B) {
	for _, be := range testredis.Backends() {
		if be.Real() && be.URL == "" {
			continue
		}
		b.Run(be.Name, func(b *testing.B) {
			s := testredis.Open(b, be)
			svc, counter := newSessionService(b, s, testredis.Prefix(b))
			e, err := NewEcho(NewServer(Deps{Store: s, Caps: s.Caps, Sessions: svc, SessionAuth: svc, Spec: []byte("openapi: 3.0.3\n")}), nil)
			if err != nil {
				b.Fatal(err)
			}
			is, err := svc.Create(context.Background(), "acme", sessions.CreateInput{UserID: "alice", AuthLevel: "BASIC"})
			if err != nil {
				b.Fatal(err)
			}
			serve := func(b *testing.B, path, token string) {
				req := httptest.NewRequest("GET", path, nil)
				if token != "" {
					req.Header.Set(SessionHeaderName, token)
				}
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
			}
			b.Run("healthz-baseline", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serve(b, "/healthz", "")
				}
			})
			b.Run("authorize", func(b *testing.B) {
				b.ReportAllocs()
				counter.reset()
				n := 0
				for b.Loop() {
					serve(b, "/v1/authorize", is.Token)
					n++
				}
				b.ReportMetric(float64(counter.n.Load())/float64(n), "redis-cmds/op")
			})
			b.Run("authorize-parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						serve(b, "/v1/authorize", is.Token)
					}
				})
			})
		})
	}
}
