package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestWebhooksDeliverRealEventsAcrossTwoGateways: two gateways built as cmd/gateway builds
// them, both running their deliverers; a webhook registered on one; tokens issued and
// revoked (with a cascade) on both while the receiver refuses everything for a while. Every
// event the token scripts wrote (GET /v1/events' list) reaches the receiver, signed so the
// specification's check accepts it, accepted once by its webhook-id, each token's events in
// order.
func TestWebhooksDeliverRealEventsAcrossTwoGateways(t *testing.T) {
	t.Parallel()
	b := testredis.Named(t, "redis8")
	cfg := defaults(t)
	cfg.RedisURL = b.URL
	cfg.WebhookAllowPrivate = true
	cfg.WebhookRetryBase = 100 * time.Millisecond
	a, h, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := gatewayWith(t, cfg, a, h)
	two, _ := gatewayWith(t, cfg, a, h)
	one.Start()
	two.Start()
	t.Cleanup(one.Stop)
	t.Cleanup(two.Stop)

	var mu sync.Mutex
	var secret []byte
	failing := true
	accepted := map[string]int{}
	order := map[string][]string{} // subject → event types in acceptance order
	bad := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if failing {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(id + "." + ts + "." + string(body)))
		sec, _ := strconv.ParseInt(ts, 10, 64)
		want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
		if !hmac.Equal([]byte(r.Header.Get("webhook-signature")), []byte(want)) || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
			bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev struct{ ID, Type, Subject string }
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id {
			bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if accepted[id]++; accepted[id] == 1 {
			order[ev.Subject] = append(order[ev.Subject], ev.Type)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rcv.Close()

	ctx := context.Background()
	created, err := one.Webhooks.Create(ctx, "acme", rcv.URL+"/hooks", []string{"token.*"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	secret, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(created.Secret, "whsec_"))
	mu.Unlock()

	root := &auth.Principal{Kind: auth.KindBearer, Tenant: "acme", TokenID: "root", Scopes: []string{auth.ScopeTokensAdmin, auth.ScopeTokensWrite}}
	for i := range 10 {
		g := one
		if i%2 == 1 {
			g = two
		}
		parent, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeTokensRead}, TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := g.Tokens.Revoke(ctx, root, parent.TokenID, "rotated"); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // a few refused attempts
	mu.Lock()
	failing = false
	mu.Unlock()

	var want []events.Event
	for cursor := ""; ; {
		page, next, err := one.Events.List(ctx, "acme", events.Filter{}, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(want) < 14 {
		t.Fatalf("%d events in the stream, want 10 issued and 4 revoked", len(want))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(accepted)
		mu.Unlock()
		if n >= len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events delivered", n, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if bad > 0 {
		t.Errorf("%d requests failed the specification's signature check", bad)
	}
	for _, e := range want {
		if accepted[e.ID] == 0 {
			t.Errorf("event %s (%s) not delivered", e.ID, e.Type)
		}
	}
	for subj, types := range order {
		if len(types) == 2 && (types[0] != "token.issued" || types[1] != "token.revoked") {
			t.Errorf("token %s: events accepted in the order %v", subj, types)
		}
	}
	ds, err := one.Webhooks.Deliveries(ctx, "acme", created.ID)
	if err != nil || len(ds) != len(want) {
		t.Fatalf("deliveries: %d records for %d events, %v", len(ds), len(want), err)
	}
}
