package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestRefusalEventsOnePerWindow: over HTTP, one token sends 505 requests under a limit of 5
// per hour, 500 refused within one refusal window; another token's 5 requests are all admitted,
// and 3 of its quote creates are refused over the tenant's quota of 1. Once the window and its
// grace pass, the tenant's stream holds exactly one ratelimit.refused event (count 500, the
// first token's id as subject, the policy and its limit) and one quota.refused (count 3, the
// second token's), and no refusal event of the admitted requests.
func TestRefusalEventsOnePerWindow(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		const window = 4 * time.Second
		cfg := defaults(t)
		if sessionstore.Hosts(s.Caps, sessionstore.LayoutPerUser) != nil {
			cfg.SessionLayout = "per-session"
		}
		cfg.KeyPrefix = prefix
		cfg.RateLimitPerToken, cfg.RateLimitPerTenant = "5/1h", "0"
		cfg.TenantMaxQuotes = 1
		cfg.EventsRefusalWindow = window
		g, err := app.New(cfg, s, app.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		t.Cleanup(g.Stop)
		ctx := context.Background()
		mint := func() tokens.Issued {
			m, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeQuotesRead, auth.ScopeQuotesWrite},
				TTL: time.Hour, TokenType: tokens.TypeService})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		a, q := mint(), mint()
		do := func(tok, method, path, body string) int {
			return serve(g, method, path, body, "Authorization", "Bearer "+tok).Code
		}
		now := time.Now()
		time.Sleep(now.Truncate(window).Add(window + 50*time.Millisecond).Sub(now)) // a window's start
		start := time.Now()
		refused := 0
		for range 505 {
			if do(a.Token, "GET", "/v1/quotes/q_0000000000000000000000000a", "") == http.StatusTooManyRequests {
				refused++
			}
		}
		if elapsed := time.Since(start); refused != 500 || elapsed > window-100*time.Millisecond {
			t.Fatalf("%d refused in %v, want 500 within the window of %v", refused, elapsed, window)
		}
		quota := 0
		if do(q.Token, "GET", "/v1/quotes/q_0000000000000000000000000a", "") != http.StatusNotFound {
			t.Fatal("an admitted read was not a 404")
		}
		for range 4 {
			if do(q.Token, "POST", "/v1/quotes", `{"customerId":"c1","salesChannel":"web","currency":"EUR"}`) == http.StatusTooManyRequests {
				quota++
			}
		}
		if quota != 3 {
			t.Fatalf("%d creates refused over the quota of 1, want 3", quota)
		}

		kinds := []events.Type{events.RateLimitRefused, events.QuotaRefused}
		var got []events.Event
		for deadline := time.Now().Add(window + 15*time.Second); len(got) < 2; time.Sleep(100 * time.Millisecond) {
			if got, _, err = g.Events.List(ctx, "acme", events.Filter{Types: kinds}, "", 100); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: refusal events after the window: %+v", b.Name, got)
			}
		}
		time.Sleep(window / 2) // a second event would be written by now
		if got, _, err = g.Events.List(ctx, "acme", events.Filter{Types: kinds}, "", 100); err != nil || len(got) != 2 {
			t.Fatalf("refusal events %+v (%v), want one ratelimit.refused and one quota.refused", got, err)
		}
		want := map[events.Type]struct {
			subject string
			data    string
		}{
			events.RateLimitRefused: {a.TokenID, `"count":500,"limit":5,"policy":"token","policyWindowMs":3600000`},
			events.QuotaRefused:     {q.TokenID, `"count":3,"limit":1,"quota":"quotes"`},
		}
		for _, e := range got {
			var d map[string]any
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			wm := float64(window.Milliseconds())
			w := want[e.Type]
			if e.Subject != w.subject || e.Actor != "token:"+w.subject || d["windowMs"] != wm || int64(d["windowStartMs"].(float64))%int64(wm) != 0 ||
				!strings.Contains(canonical(d), w.data) {
				t.Errorf("%s event: subject %s actor %s data %s, want subject %s data %s", e.Type, e.Subject, e.Actor, e.Data, w.subject, w.data)
			}
		}
	})
}

// canonical is d as JSON without the window's fields, keys sorted.
func canonical(d map[string]any) string {
	c := map[string]any{}
	for k, v := range d {
		if k != "windowMs" && k != "windowStartMs" {
			c[k] = v
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}
