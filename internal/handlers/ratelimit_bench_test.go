package handlers

import (
	"net/http/httptest"
	"testing"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkQuoteGetLimits is GET /v1/quotes/{id} by bearer token through the whole gateway
// (httptest, Redis 8), with the request-rate limits off and on (never reached): what the
// limiter adds to a request in process, the in-process side of make bench's rate-limit pair.
//
//	go test -run '^$' -bench BenchmarkQuoteGetLimits -benchmem -count 5 ./internal/handlers/
func BenchmarkQuoteGetLimits(b *testing.B) {
	be := testredis.Named(b, "redis8")
	for _, c := range []struct {
		name string
		on   bool
	}{{"off", false}, {"on", true}} {
		b.Run(c.name, func(b *testing.B) {
			s := testredis.Open(b, be)
			h := newHarnessWith(b, s, TestGateway{Prefix: testredis.Prefix(b), Config: func(cfg *config.Config) {
				if c.on {
					cfg.RateLimitPerToken, cfg.RateLimitPerTenant = "1000000000/1m", "1000000000/1m"
				} else {
					cfg.RateLimitPerToken, cfg.RateLimitPerTenant, cfg.RateLimitPerSession = "0", "0", "0"
				}
			}}, nil)
			bearer := h.bearer("acme", auth.ScopeQuotesRead, auth.ScopeQuotesWrite)
			rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", bearer)
			var q quoteJSON
			decode(b, rec, &q)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest("GET", "/v1/quotes/"+q.QuoteId, nil)
					req.Header.Set("Authorization", bearer)
					rec := httptest.NewRecorder()
					h.e.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		})
	}
}
