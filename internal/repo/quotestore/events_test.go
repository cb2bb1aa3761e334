package quotestore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestQuoteEventsIffTheChange: each quote change appends its event to the tenant's stream with
// the request's origin (created, updated per patch and item write, submitted, deleted); a
// replayed create, a stale If-Match, a missing item, a change of a submitted quote, a delete of
// an absent quote and a create over the tenant's quota append none.
func TestQuoteEventsIffTheChange(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := events.WithOrigin(context.Background(), events.Origin{Actor: "token:T0", RequestID: "req-1"})
		r, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Hour, MaxPerTenant: 2})
		if err != nil {
			t.Fatal(err)
		}
		key := r.Keys.EventStream(r.Hasher.TenantTag("acme"))
		in := quotes.NewQuote{ID: quotes.NewID(), Tenant: "acme", CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"}
		q, err := r.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(ctx, in); err != nil { // the idempotent replay: the same draft
			t.Fatal(err)
		}
		_, err = r.Patch(ctx, "acme", q.ID, q.StateVersion+5, quotes.Patch{DiscountMinor: ptr(int64(0))})
		storetest.WantKind(t, err, apperr.PreconditionFailed)
		if _, err := r.Patch(ctx, "acme", q.ID, q.StateVersion, quotes.Patch{TaxMinor: ptr(int64(10))}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.PutItem(ctx, "acme", q.ID, -1, quotes.Item{ID: "i1", SKU: "sku", Quantity: 2, UnitPriceMinor: 100}); err != nil {
			t.Fatal(err)
		}
		_, err = r.DeleteItem(ctx, "acme", q.ID, "nope", -1)
		storetest.WantKind(t, err, apperr.NotFound)
		if _, err := r.DeleteItem(ctx, "acme", q.ID, "i1", -1); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Submit(ctx, "acme", q.ID, -1); err != nil {
			t.Fatal(err)
		}
		_, err = r.Submit(ctx, "acme", q.ID, -1)
		storetest.WantKind(t, err, apperr.InvalidStatus)
		_, err = r.Patch(ctx, "acme", q.ID, -1, quotes.Patch{TaxMinor: ptr(int64(1))})
		storetest.WantKind(t, err, apperr.InvalidStatus)
		// Over the quota of 2: one more draft fits, the next is refused.
		other := mustCreateQuote(t, r, "acme")
		_, err = r.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		storetest.WantQuota(t, err, "quotes", 2)
		for range 2 {
			if err := r.Delete(ctx, "acme", q.ID); err != nil {
				t.Fatal(err)
			}
		}
		got := storetest.Events(t, s, key)
		data := storetest.WantEvents(t, got, "acme",
			[2]string{"quote.created", q.ID}, [2]string{"quote.updated", q.ID}, [2]string{"quote.updated", q.ID},
			[2]string{"quote.updated", q.ID}, [2]string{"quote.submitted", q.ID}, [2]string{"quote.created", other.ID},
			[2]string{"quote.deleted", q.ID})
		want := []map[string]any{
			{"status": "DRAFT", "currency": "EUR", "stateVersion": 1.0},
			{"status": "DRAFT", "stateVersion": 2.0, "change": "patch"},
			{"status": "DRAFT", "stateVersion": 3.0, "change": "item_put"},
			{"status": "DRAFT", "stateVersion": 4.0, "change": "item_delete"},
			{"status": "SUBMITTED", "stateVersion": 5.0, "change": "submit"},
			{"status": "DRAFT", "currency": "EUR", "stateVersion": 1.0},
			{"status": "SUBMITTED"},
		}
		for i, w := range want {
			for k, v := range w {
				if data[i][k] != v {
					t.Errorf("event %d (%s) data %v: %s = %v, want %v", i, got[i].Type, data[i], k, data[i][k], v)
				}
			}
			if len(data[i]) != len(w) {
				t.Errorf("event %d data %v, want only %v", i, data[i], w)
			}
			actor, req := "token:T0", "req-1"
			if i == 5 { // created without an origin: the system's
				actor, req = events.ActorSystem, ""
			}
			if got[i].Actor != actor || got[i].RequestID != req {
				t.Errorf("event %d actor %q request id %q, want %q %q", i, got[i].Actor, got[i].RequestID, actor, req)
			}
		}
		if d := storetest.PTTL(t, s, key); d < events.DefaultMaxAge-time.Minute || d > events.DefaultMaxAge {
			t.Fatalf("stream TTL %v, want about %v", d, events.DefaultMaxAge)
		}
	})
}
