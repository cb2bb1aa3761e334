package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Three gateway replicas on one Redis, with the default flush settings, share a tenant's
// request-rate limit: pushed together over HTTP at three times the limit, they admit at least
// the limit and at most the limit × 1.5 — apart, they would admit 3 ×. The overshoot is what
// the other replicas admit within a flush's round trip (1–2% here on an idle machine, logged);
// on a loaded one that round trip has no fixed bound (713 of 600 seen once), so the algorithm's
// own bound is held by internal/ratelimit's tests, driven by the limiters' flushes. Refused answers
// are 429 with Retry-After, never another status.
func TestRateLimitAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if b.Name == "embedded" {
			t.Skip("replicas need a shared Redis")
		}
		const limit = 600
		cfg := defaults(t)
		if sessionstore.Hosts(s.Caps, sessionstore.LayoutPerUser) != nil {
			cfg.SessionLayout = "per-session"
		}
		cfg.KeyPrefix = prefix
		cfg.RateLimitPerToken, cfg.RateLimitPerTenant = "0", "600/1h"
		a, h, err := app.FreshKeys(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		var mint *tokens.Service
		for range 3 {
			g, err := app.New(cfg, testredis.Open(t, b), app.Options{Auth: a, Hasher: h})
			if err != nil {
				t.Fatal(err)
			}
			g.Start()
			srv := httptest.NewServer(g.Echo)
			t.Cleanup(func() { srv.Close(); g.Stop() })
			urls = append(urls, srv.URL)
			mint = g.Tokens
		}
		out, err := mint.Mint(context.Background(), tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeQuotesRead},
			TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		var admitted, other atomic.Int64
		var wg sync.WaitGroup
		for _, u := range urls {
			for range 4 { // 4 clients per replica, limit/4 requests each: 3 × the limit in all
				wg.Go(func() {
					for range limit / 4 {
						req, _ := http.NewRequest("GET", u+"/v1/quotes/q_0000000000000000000000000a", nil)
						req.Header.Set("Authorization", "Bearer "+out.Token)
						res, err := http.DefaultClient.Do(req)
						if err != nil {
							other.Add(1)
							continue
						}
						res.Body.Close()
						switch {
						case res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "":
						case res.StatusCode == http.StatusNotFound:
							admitted.Add(1)
						default:
							other.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		eps := float64(admitted.Load()-limit) / limit
		t.Logf("%s: 3 replicas admitted %d of %d requests, tenant limit %d: ε = %.3f", b.Name, admitted.Load(), 3*limit, limit, eps)
		if other.Load() > 0 || admitted.Load() < limit || eps > 0.5 {
			t.Fatalf("admitted %d (want %d..%d), %d other answers", admitted.Load(), limit, limit*3/2, other.Load())
		}
	})
}
