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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// hookReceiver is a webhook endpoint on loopback checking each request as the Standard
// Webhooks specification tells a consumer to, accepting each webhook-id once.
type hookReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	secret   []byte
	failing  bool
	bad      int
	accepted map[string]int
	order    map[string][]string // subject → event types, in acceptance order
	types    map[string]bool
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{accepted: map[string]int{}, order: map[string][]string{}, types: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	m := hmac.New(sha256.New, r.secret)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(req.Header.Get("webhook-signature")), []byte(want)) || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev struct{ ID, Type, Subject string }
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != id {
		r.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.accepted[id]++; r.accepted[id] == 1 {
		r.order[ev.Subject] = append(r.order[ev.Subject], ev.Type)
		r.types[ev.Type] = true
	}
	w.WriteHeader(http.StatusOK)
}

func (r *hookReceiver) set(f func()) { r.mu.Lock(); f(); r.mu.Unlock() }

// register creates a webhook to the receiver on g and keeps its secret.
func (r *hookReceiver) register(t *testing.T, g *app.Gateway, events ...string) string {
	t.Helper()
	created, err := g.Webhooks.Create(context.Background(), "acme", r.srv.URL+"/hooks", events)
	if err != nil {
		t.Fatal(err)
	}
	r.set(func() { r.secret, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(created.Secret, "whsec_")) })
	return created.ID
}

// waitAll waits until every event of the tenant's stream is accepted, and checks the signatures.
func (r *hookReceiver) waitAll(t *testing.T, g *app.Gateway) []events.Event {
	t.Helper()
	ctx := context.Background()
	var want []events.Event
	for cursor := ""; ; {
		page, next, err := g.Events.List(ctx, "acme", events.Filter{}, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want = append(want, page...); next == "" {
			break
		}
		cursor = next
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		missing := 0
		for _, e := range want {
			if r.accepted[e.ID] == 0 {
				missing++
			}
		}
		bad := r.bad
		r.mu.Unlock()
		if bad > 0 {
			t.Fatalf("%d requests failed the specification's signature check", bad)
		}
		if missing == 0 {
			return want
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events not delivered", missing, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func webhookGateways(t *testing.T, n int, adjust func(*config.Config)) []*app.Gateway {
	t.Helper()
	b := testredis.Named(t, "redis8")
	cfg := defaults(t)
	cfg.RedisURL = b.URL
	cfg.WebhookAllowPrivate = true
	cfg.SessionEvents = "all"
	cfg.WebhookRetryBase = 100 * time.Millisecond
	if adjust != nil {
		adjust(&cfg)
	}
	a, h, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var gs []*app.Gateway
	for range n {
		g, _ := gatewayWith(t, cfg, a, h)
		g.Start()
		t.Cleanup(g.Stop)
		gs = append(gs, g)
	}
	return gs
}

// TestWebhooksDeliverRealEventsAcrossTwoGateways: two gateways built as cmd/gateway builds
// them, both delivering; tokens issued and revoked on both while the receiver refuses
// everything for a while. Every event the token scripts wrote (GET /v1/events' list) reaches
// the receiver, signed so the specification's check accepts it, accepted once by its
// webhook-id, each token's events in order, each recorded in the deliveries.
func TestWebhooksDeliverRealEventsAcrossTwoGateways(t *testing.T) {
	t.Parallel()
	gs := webhookGateways(t, 2, nil)
	rcv := newHookReceiver(t)
	rcv.set(func() { rcv.failing = true })
	id := rcv.register(t, gs[0], "token.*")
	ctx := context.Background()
	root := &auth.Principal{Kind: auth.KindBearer, Tenant: "acme", TokenID: "root", Scopes: []string{auth.ScopeTokensAdmin, auth.ScopeTokensWrite}}
	for i := range 10 {
		g := gs[i%2]
		tok, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeTokensRead}, TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := g.Tokens.Revoke(ctx, root, tok.TokenID, "rotated"); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // refused attempts
	rcv.set(func() { rcv.failing = false })
	want := rcv.waitAll(t, gs[0])
	if len(want) != 14 {
		t.Fatalf("%d events in the stream, want 10 issued and 4 revoked", len(want))
	}
	rcv.mu.Lock()
	for subj, types := range rcv.order {
		if len(types) == 2 && (types[0] != "token.issued" || types[1] != "token.revoked") {
			t.Errorf("token %s: events accepted in the order %v", subj, types)
		}
	}
	rcv.mu.Unlock()
	ds, err := gs[1].Webhooks.Deliveries(ctx, "acme", id, "", 100)
	if err != nil || len(ds.Items) != len(want) {
		t.Fatalf("deliveries: %d records for %d events, %v", len(ds.Items), len(want), err)
	}
}

// TestWebhooksDeliverEveryEventType: a change of every type the catalogue says is written —
// tokens issued and revoked; sessions created, challenged, failed, locked, verified, rotated,
// revoked, logged out and evicted at the cap; quotes created, updated, submitted and deleted;
// cases created, escalated (by a caller and by the sweeper), assigned, resolved and reopened;
// a request refused by the rate limit and a create over a quota, over HTTP —
// reaches a webhook subscribed to "*", signed.
func TestWebhooksDeliverEveryEventType(t *testing.T) {
	t.Parallel()
	gs := webhookGateways(t, 1, func(c *config.Config) {
		c.SessionMaxPerUser, c.MFAMaxAttempts, c.CaseSweepInterval = 2, 2, 100*time.Millisecond
		c.RateLimitPerToken, c.TenantMaxWebhooks, c.EventsRefusalWindow = "1/1h", 1, time.Second
	})
	g := gs[0]
	rcv := newHookReceiver(t)
	rcv.register(t, g, "*")
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tok, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeTokensRead}, TTL: time.Hour, TokenType: tokens.TypeService})
	must(err)
	_, err = g.Tokens.Revoke(ctx, &auth.Principal{Kind: auth.KindBearer, Tenant: "acme", TokenID: "root", Scopes: []string{auth.ScopeTokensAdmin}}, tok.TokenID, "done")
	must(err)

	a, err := g.Sessions.Create(ctx, "acme", sessions.CreateInput{UserID: "ann", AuthLevel: "BASIC"})
	must(err)
	ch, err := g.Sessions.StartChallenge(ctx, "acme", a.Ref.ID())
	must(err)
	_, err = g.Sessions.Verify(ctx, "acme", a.Ref.ID(), ch.ID, wrong(ch.Code))
	if err == nil {
		t.Fatal("a wrong code verified")
	}
	_, _ = g.Sessions.Verify(ctx, "acme", a.Ref.ID(), ch.ID, wrong(ch.Code)) // the limit: locked
	_, _ = g.Sessions.Verify(ctx, "acme", a.Ref.ID(), ch.ID, wrong(ch.Code))

	b, err := g.Sessions.Create(ctx, "acme", sessions.CreateInput{UserID: "bob", AuthLevel: "BASIC"})
	must(err)
	ch, err = g.Sessions.StartChallenge(ctx, "acme", b.Ref.ID())
	must(err)
	_, err = g.Sessions.Verify(ctx, "acme", b.Ref.ID(), ch.ID, ch.Code)
	must(err)
	_, err = g.Sessions.Rotate(ctx, "acme", b.Ref.ID())
	must(err)
	must(g.Sessions.Revoke(ctx, "acme", b.Ref.ID()))

	c, err := g.Sessions.Create(ctx, "acme", sessions.CreateInput{UserID: "cy", AuthLevel: "BASIC"})
	must(err)
	p, err := g.Sessions.Authenticate(ctx, c.Token)
	must(err)
	// The end user's own logout, as its authentication marks the request's origin.
	must(g.Sessions.Logout(events.WithOrigin(ctx, events.Origin{Actor: events.SessionActor(c.Ref.ID())}), p))
	for range 3 { // the third at the cap of 2 evicts the oldest
		_, err := g.Sessions.Create(ctx, "acme", sessions.CreateInput{UserID: "dee", AuthLevel: "BASIC"})
		must(err)
	}

	overdue := quoteAndCaseChanges(t, g)
	refusals(t, g)

	// Session events reach the tenant's stream through the relay, just after their change; the
	// sweeper escalates the overdue case within its interval.
	deadline := time.Now().Add(30 * time.Second)
	for missing := emittedMissing(rcv); len(missing) > 0; missing = emittedMissing(rcv) {
		if time.Now().After(deadline) {
			t.Fatalf("never delivered: %v", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for !slices.Equal(rcv.subjectTypes(overdue), []string{"case.created", "case.escalated"}) {
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper's escalation never delivered: %v", rcv.subjectTypes(overdue))
		}
		time.Sleep(50 * time.Millisecond)
	}
	rcv.waitAll(t, g)
}

// subjectTypes are the types accepted for subject, in order.
func (r *hookReceiver) subjectTypes(subject string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order[subject])
}

// quoteAndCaseChanges makes every quote and case change of tenant acme on g: a draft created,
// patched, submitted and deleted; a case created, escalated, assigned, resolved, reopened, and
// another created overdue for the sweeper, whose id it returns.
func quoteAndCaseChanges(t *testing.T, g *app.Gateway) string {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var q *quotes.Quote
	_, err := g.Quotes.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"}, idempotency.Key{},
		func(x *quotes.Quote) (idempotency.Response, error) { q = x; return idempotency.Response{}, nil })
	must(err)
	tax := int64(5)
	_, err = g.Quotes.Patch(ctx, "acme", q.ID, -1, quotes.Patch{TaxMinor: &tax})
	must(err)
	_, err = g.Quotes.Submit(ctx, "acme", q.ID, -1)
	must(err)
	must(g.Quotes.Delete(ctx, "acme", q.ID))

	open := func(due time.Time) *cases.Case {
		var c *cases.Case
		_, err := g.Cases.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/42", AssignedTeam: "ops", DueAt: due, Reason: "late", Actor: "svc"},
			idempotency.Key{}, func(x *cases.Case) (idempotency.Response, error) { c = x; return idempotency.Response{}, nil })
		must(err)
		return c
	}
	c := open(time.Now().Add(time.Hour))
	ch := cases.Change{Tenant: "acme", ID: c.ID, IfMatch: -1, Reason: "why", Actor: "svc"}
	_, err = g.Cases.Escalate(ctx, ch)
	must(err)
	as := ch
	as.AssignedTeam = "l2"
	_, err = g.Cases.Assign(ctx, as)
	must(err)
	_, err = g.Cases.Resolve(ctx, ch)
	must(err)
	_, err = g.Cases.Reopen(ctx, ch)
	must(err)
	return open(time.Now().Add(-time.Minute)).ID
}

// refusals makes a request the rate limit refuses (a token's second, at 1 per hour) and a
// webhook create over the tenant's quota (1: the receiver's), over HTTP on g.
func refusals(t *testing.T, g *app.Gateway) {
	t.Helper()
	do := func(method, path, body string) int {
		tok, err := g.Tokens.Mint(context.Background(), tokens.MintRequest{Tenant: "acme", Subject: "svc",
			Scopes: []string{auth.ScopeWebhooksRead, auth.ScopeWebhooksWrite}, TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		code := 0
		for range 2 {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			g.Echo.ServeHTTP(rec, req)
			if code = rec.Code; body != "" {
				break
			}
		}
		return code
	}
	if code := do("GET", "/v1/webhooks", ""); code != http.StatusTooManyRequests {
		t.Fatalf("a second request at 1 per hour: %d", code)
	}
	if code := do("POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/hooks","events":["*"]}`); code != http.StatusTooManyRequests {
		t.Fatalf("a webhook over the quota of 1: %d", code)
	}
}

// emittedMissing are the catalogue's written types the receiver has not accepted yet.
func emittedMissing(r *hookReceiver) []events.Type {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Type
	for _, info := range events.Catalogue {
		if info.Emitted && !r.types[string(info.Type)] {
			out = append(out, info.Type)
		}
	}
	return out
}

// wrong is a code that is not code.
func wrong(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}
