package app_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestEventsOff: with GATEWAY_EVENTS=false no write appends an event (no stream key, no
// outbox), GET /v1/events says events are off (404 naming the setting) and a webhook cannot
// be registered (409); the writes themselves answer as usual.
func TestEventsOff(t *testing.T) {
	t.Parallel()
	prefix := testredis.Prefix(t)
	s := testredis.Open(t, testredis.Backends()[1])
	cfg := defaults(t)
	cfg.KeyPrefix = prefix
	cfg.Events = false
	cfg.SessionEvents = true // ignored while events are off
	g, err := app.New(cfg, s, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Stop()
	ctx := context.Background()
	admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "ops", TTL: time.Hour, TokenType: tokens.TypeService,
		Scopes: []string{auth.ScopeTokensWrite, auth.ScopeSessionsWrite, auth.ScopeQuotesWrite, auth.ScopeCasesWrite,
			auth.ScopeEventsRead, auth.ScopeWebhooksWrite}})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) *httptest.ResponseRecorder {
		return serve(g, method, path, body, "Authorization", "Bearer "+admin.Token)
	}
	due := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions", `{"userId":"alice","authLevel":"BASIC"}`},
		{"POST", "/v1/quotes", `{"customerId":"c1","salesChannel":"web","currency":"EUR"}`},
		{"POST", "/v1/cases", `{"subjectRef":"order/1","assignedTeam":"ops","dueAt":"` + due + `","reason":"late"}`},
		{"POST", "/v1/tokens", `{"subject":"svc","tokenType":"service","scopes":["quotes:write"],"ttlSeconds":600}`},
	} {
		if rec := do(w.method, w.path, w.body); rec.Code != 201 {
			t.Fatalf("%s %s = %d %s", w.method, w.path, rec.Code, rec.Body)
		}
	}
	if n := testredis.KeyCount(t, s, prefix+":v1:events") + testredis.KeyCount(t, s, prefix+":v1:evoutbox"); n != 0 {
		t.Fatalf("events off, yet %d event keys", n)
	}
	if rec := do("GET", "/v1/events", ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), "GATEWAY_EVENTS") {
		t.Fatalf("GET /v1/events = %d %s", rec.Code, rec.Body)
	}
	if rec := do("GET", "/v1/events/stream", ""); rec.Code != 404 {
		t.Fatalf("GET /v1/events/stream = %d %s", rec.Code, rec.Body)
	}
	rec := do("POST", "/v1/webhooks", `{"url":"https://hooks.example.com/x","events":["quote.created"]}`)
	if rec.Code != 409 || !strings.Contains(rec.Body.String(), "GATEWAY_EVENTS") {
		t.Fatalf("POST /v1/webhooks = %d %s", rec.Code, rec.Body)
	}
}

// TestWebhookForSessionEventsWithThemOff: with session events off (the default) a webhook
// asking for a session event type by name or prefix would never receive one: its
// registration is refused (409 naming GATEWAY_SESSION_EVENTS); "*" and other types register,
// and with session events on a session type does.
func TestWebhookForSessionEventsWithThemOff(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	for _, sessionEvents := range []bool{false, true} {
		cfg := defaults(t)
		cfg.SessionEvents = sessionEvents
		cfg.WebhookAllowPrivate = true
		g, err := app.New(cfg, s, app.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g.Start()
		admin, err := g.Tokens.Mint(context.Background(), tokens.MintRequest{Tenant: "acme", Subject: "ops", TTL: time.Hour,
			TokenType: tokens.TypeService, Scopes: []string{auth.ScopeWebhooksWrite}})
		if err != nil {
			t.Fatal(err)
		}
		for events, refused := range map[string]bool{
			`["session.revoked"]`: true, `["session.*"]`: true, `["token.*","session.logged_out"]`: true,
			`["*"]`: false, `["token.revoked"]`: false, `["quote.*","case.*"]`: false,
		} {
			rec := serve(g, "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/x","events":`+events+`}`, "Authorization", "Bearer "+admin.Token)
			want := 201
			if refused && !sessionEvents {
				want = 409
			}
			if rec.Code != want || want == 409 && !strings.Contains(rec.Body.String(), "GATEWAY_SESSION_EVENTS") {
				t.Errorf("session events %v, events %s: %d %s, want %d", sessionEvents, events, rec.Code, rec.Body, want)
			}
		}
		g.Stop()
	}
}
