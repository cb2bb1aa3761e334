package app_test

import (
	"cmp"
	"context"
	"net/http/httptest"
	"slices"
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
	cfg.SessionEvents = "all" // ignored while events are off
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

// TestWebhookForSessionEventsWithThemOff: a webhook asking for session event types this
// gateway does not write would never receive them: its registration is refused (409 naming
// GATEWAY_SESSION_EVENTS). With session events off, every session type and the session.*
// prefix; with the ends only (the default), every other session type and the prefix, while
// the ends register; with all of them, none. "*" and other types always register.
func TestWebhookForSessionEventsWithThemOff(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	for _, set := range []string{"", "off", "ends", "all"} {
		cfg := defaults(t)
		if set != "" {
			cfg.SessionEvents = set
		}
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
		// refused under each setting ("" is the default)
		for events, refusedUnder := range map[string]string{
			`["session.revoked"]`: "off", `["session.logged_out","session.evicted"]`: "off",
			`["session.*"]`: "off ends", `["token.*","session.created"]`: "off ends", `["session.mfa_failed"]`: "off ends",
			`["*"]`: "", `["token.revoked"]`: "", `["quote.*","case.*"]`: "",
		} {
			rec := serve(g, "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/x","events":`+events+`}`, "Authorization", "Bearer "+admin.Token)
			want := 201
			if slices.Contains(strings.Fields(refusedUnder), cmp.Or(set, "ends")) {
				want = 409
			}
			if rec.Code != want || want == 409 && !strings.Contains(rec.Body.String(), "GATEWAY_SESSION_EVENTS") {
				t.Errorf("session events %q, events %s: %d %s, want %d", set, events, rec.Code, rec.Body, want)
			}
		}
		g.Stop()
	}
}
