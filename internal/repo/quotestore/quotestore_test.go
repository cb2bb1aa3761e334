package quotestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newTestQuotes(t *testing.T, s *store.Store, prefix string, maxItems int) *Store {
	t.Helper()
	q, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Hour, MaxItems: maxItems})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustCreateQuote(t *testing.T, q *Store, tenant string) *quotes.Quote {
	t.Helper()
	d, err := q.Create(context.Background(), quotes.NewQuote{Tenant: tenant, CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

func TestNewQuotesValidatesOptions(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h := storetest.Hasher(t)
	for _, o := range []Options{{Hasher: h}, {Prefix: "p"}, {Prefix: "p", Hasher: h, MaxItems: 5000}, {Prefix: "p", Hasher: h, TTL: time.Millisecond}, {Prefix: "p", Hasher: h, MaxPerTenant: MaxPerTenant + 1}} {
		if _, err := New(s, o); !errors.Is(err, repo.ErrBadOptions) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
	if _, err := New(nil, Options{Prefix: "p"}); !errors.Is(err, repo.ErrBadOptions) {
		t.Errorf("nil store: err = %v", err)
	}
}

func TestQuoteLifecycle(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 100)
		d := mustCreateQuote(t, q, "acme")
		if d.Status != quotes.Draft || d.StateVersion != 1 || d.SchemaVersion != repo.SchemaVersion || d.PricingVersion != quotes.PricingVersion ||
			d.TotalMinor != 0 || d.ExpiresAt.Sub(d.UpdatedAt) != time.Hour {
			t.Fatalf("created %+v", d)
		}
		d, err := q.PutItem(ctx, "acme", d.ID, 1, quotes.Item{ID: "a", SKU: "SKU-1", Quantity: 3, UnitPriceMinor: 250, Description: "widget"})
		if err != nil || d.SubtotalMinor != 750 || d.TotalMinor != 750 || d.ItemCount != 1 || d.StateVersion != 2 {
			t.Fatalf("put: %+v %v", d, err)
		}
		d, err = q.Patch(ctx, "acme", d.ID, 2, quotes.Patch{DiscountMinor: ptr[int64](50), TaxMinor: ptr[int64](70), SalesChannel: ptr("partner")})
		if err != nil || d.TotalMinor != 770 || d.SalesChannel != "partner" || d.StateVersion != 3 {
			t.Fatalf("patch: %+v %v", d, err)
		}
		d, err = q.PutItem(ctx, "acme", d.ID, 3, quotes.Item{ID: "a", SKU: "SKU-1", Quantity: 1, UnitPriceMinor: 250})
		if err != nil || d.SubtotalMinor != 250 || d.ItemCount != 1 || d.TotalMinor != 270 {
			t.Fatalf("replace: %+v %v", d, err)
		}
		_, err = q.DeleteItem(ctx, "acme", d.ID, "a", 4)
		storetest.WantKind(t, err, apperr.Unprocessable) // the discount (50) would exceed the empty subtotal
		items, got, err := q.Items(ctx, "acme", d.ID)
		if err != nil || len(items) != 1 || items[0].LineTotalMinor != 250 || got.StateVersion != 4 {
			t.Fatalf("items: %+v %+v %v", items, got, err)
		}
		_, err = q.DeleteItem(ctx, "acme", d.ID, "nope", 4)
		storetest.WantKind(t, err, apperr.NotFound)
		if storetest.PTTL(t, s, q.itemsKey(d.ID)) <= 0 || storetest.PTTL(t, s, q.summaryKey(d.ID)) <= 0 {
			t.Fatal("keys without TTL")
		}
		d, err = q.Submit(ctx, "acme", d.ID, 4)
		if err != nil || d.Status != quotes.Submitted || d.SubmittedAt.IsZero() || d.StateVersion != 5 {
			t.Fatalf("submit: %+v %v", d, err)
		}
		_, err = q.Patch(ctx, "acme", d.ID, 5, quotes.Patch{TaxMinor: ptr[int64](1)})
		storetest.WantKind(t, err, apperr.InvalidStatus)
		_, err = q.PutItem(ctx, "acme", d.ID, 5, quotes.Item{ID: "b", SKU: "S", Quantity: 1, UnitPriceMinor: 1})
		storetest.WantKind(t, err, apperr.InvalidStatus)
		_, err = q.Submit(ctx, "acme", d.ID, 5)
		storetest.WantKind(t, err, apperr.InvalidStatus)
		storetest.RequireTTLs(t, s, prefix)
		// Another tenant neither sees nor deletes it.
		_, err = q.Get(ctx, "other", d.ID)
		storetest.WantKind(t, err, apperr.NotFound)
		_, _, err = q.Items(ctx, "other", d.ID)
		storetest.WantKind(t, err, apperr.NotFound)
		if err := q.Delete(ctx, "other", d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Get(ctx, "acme", d.ID); err != nil {
			t.Fatalf("deleted by another tenant: %v", err)
		}
		if err := q.Delete(ctx, "acme", d.ID); err != nil {
			t.Fatal(err)
		}
		_, err = q.Get(ctx, "acme", d.ID)
		storetest.WantKind(t, err, apperr.NotFound)
		if n := storetest.RequireTTLs(t, s, prefix); n != 1 || len(storetest.Events(t, s, q.Keys.EventStream(q.Hasher.TenantTag("acme")))) == 0 {
			t.Fatalf("%d keys left after delete, want only the tenant's event stream", n)
		}
	})
}

// TestQuoteTotalsInvariant drives random item and patch sequences against a Go model and
// checks after every step that the stored totals match it and satisfy the invariant.
func TestQuoteTotalsInvariant(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 8)
		rng := rand.New(rand.NewPCG(5, uint64(len(b.Name))))
		d := mustCreateQuote(t, q, "acme")
		lines := map[string]int64{}
		var discount, tax int64
		subtotal := func() int64 {
			var n int64
			for _, v := range lines {
				n += v
			}
			return n
		}
		applied := 0
		for step := range 200 {
			id := fmt.Sprintf("i%d", rng.IntN(10))
			var (
				next *quotes.Quote
				err  error
				want error // the refusal the model predicts
			)
			switch op := rng.IntN(4); op {
			case 0, 1:
				qty, price := 1+rng.Int64N(20), rng.Int64N(10_000)
				_, exists := lines[id]
				if !exists && len(lines) >= 8 {
					want = apperr.BoundExceeded
				} else if discount > subtotal()-lines[id]+qty*price {
					want = apperr.Unprocessable
				}
				next, err = q.PutItem(ctx, "acme", d.ID, d.StateVersion, quotes.Item{ID: id, SKU: "S-" + id, Quantity: qty, UnitPriceMinor: price})
				if want == nil && err == nil {
					lines[id] = qty * price
				}
			case 2:
				_, exists := lines[id]
				if !exists {
					want = apperr.NotFound
				} else if discount > subtotal()-lines[id] {
					want = apperr.Unprocessable
				}
				next, err = q.DeleteItem(ctx, "acme", d.ID, id, d.StateVersion)
				if want == nil && err == nil {
					delete(lines, id)
				}
			case 3:
				nd, nt := rng.Int64N(subtotal()+2000), rng.Int64N(5000)
				if nd > subtotal() {
					want = apperr.Unprocessable
				}
				next, err = q.Patch(ctx, "acme", d.ID, d.StateVersion, quotes.Patch{DiscountMinor: &nd, TaxMinor: &nt})
				if want == nil && err == nil {
					discount, tax = nd, nt
				}
			}
			if want != nil {
				if !errors.Is(err, want) {
					t.Fatalf("step %d: err = %v, want %v", step, err, want)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if next.StateVersion != d.StateVersion+1 {
				t.Fatalf("step %d: stateVersion %d after %d", step, next.StateVersion, d.StateVersion)
			}
			d = next
			applied++
			if d.SubtotalMinor != subtotal() || d.DiscountMinor != discount || d.TaxMinor != tax ||
				d.TotalMinor != d.SubtotalMinor-d.DiscountMinor+d.TaxMinor || d.ItemCount != len(lines) {
				t.Fatalf("step %d: stored %+v, model subtotal %d discount %d tax %d items %d", step, d, subtotal(), discount, tax, len(lines))
			}
		}
		if applied < 100 {
			t.Fatalf("only %d of 200 steps were applied", applied)
		}
		items, got, err := q.Items(ctx, "acme", d.ID)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, it := range items {
			sum += it.LineTotalMinor
		}
		if sum != got.SubtotalMinor || len(items) != got.ItemCount {
			t.Fatalf("items sum %d (%d items) vs summary %+v", sum, len(items), got)
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

// TestQuoteConcurrentPatch: 64 writers with the same If-Match → exactly one wins.
func TestQuoteConcurrentPatch(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 100)
		d := mustCreateQuote(t, q, "acme")
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = q.Patch(ctx, "acme", d.ID, 1, quotes.Patch{TaxMinor: ptr(int64(i))})
			})
		}
		wg.Wait()
		ok, stale := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, apperr.PreconditionFailed):
				stale++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}
		got, err := q.Get(ctx, "acme", d.ID)
		if ok != 1 || stale != 63 || err != nil || got.StateVersion != 2 {
			t.Fatalf("ok %d stale %d, final %+v %v", ok, stale, got, err)
		}
	})
}

// TestQuoteReadsPreviousSchema proves a v1 draft (field `channel`, no pricingVersion, no
// expiresAtMs) is read and can still be written.
func TestQuoteReadsPreviousSchema(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 100)
		id := quotes.NewID()
		storetest.HSet(t, s, q.summaryKey(id), map[string]string{
			"schemaVersion": "1", "quoteId": id, "tenantId": "acme", "customerId": "c1", "channel": "store",
			"status": "DRAFT", "currency": "JPY", "subtotalMinor": "0", "discountMinor": "0", "taxMinor": "0",
			"totalMinor": "0", "itemCount": "0", "stateVersion": "4", "createdAtMs": "1700000000000", "updatedAtMs": "1700000001000",
		})
		d, err := q.Get(ctx, "acme", id)
		if err != nil || d.SalesChannel != "store" || d.PricingVersion != 1 || d.SchemaVersion != 1 ||
			!d.ExpiresAt.Equal(time.UnixMilli(1700000001000).Add(time.Hour)) {
			t.Fatalf("v1 read: %+v %v", d, err)
		}
		d, err = q.PutItem(ctx, "acme", id, 4, quotes.Item{ID: "x", SKU: "S", Quantity: 2, UnitPriceMinor: 5})
		if err != nil || d.TotalMinor != 10 || d.SalesChannel != "store" || d.StateVersion != 5 {
			t.Fatalf("v1 write: %+v %v", d, err)
		}
		d, err = q.Patch(ctx, "acme", id, 5, quotes.Patch{SalesChannel: ptr("web")})
		if err != nil || d.SalesChannel != "web" {
			t.Fatalf("v1 patch: %+v %v", d, err)
		}
	})
}

func TestQuoteRefusesCorrupt(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 100)
		good := map[string]string{
			"schemaVersion": "2", "tenantId": "acme", "customerId": "c1", "salesChannel": "web",
			"status": "DRAFT", "currency": "EUR", "subtotalMinor": "10", "discountMinor": "0", "taxMinor": "0",
			"totalMinor": "10", "itemCount": "1", "pricingVersion": "1", "stateVersion": "2", "createdAtMs": "1700000000000",
			"updatedAtMs": "1700000000000", "expiresAtMs": "1700003600000",
		}
		tests := []struct {
			name   string
			change map[string]string
			drop   string
		}{
			{"bad number", map[string]string{"stateVersion": "two"}, ""},
			{"broken invariant", map[string]string{"totalMinor": "11"}, ""},
			{"unknown status", map[string]string{"status": "LOST"}, ""},
			{"future schema", map[string]string{"schemaVersion": "3"}, ""},
			{"missing currency", nil, "currency"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := quotes.NewID()
				m := map[string]string{"quoteId": id}
				for k, v := range good {
					m[k] = v
				}
				for k, v := range tt.change {
					m[k] = v
				}
				delete(m, tt.drop)
				storetest.HSet(t, s, q.summaryKey(id), m)
				if _, err := q.Get(ctx, "acme", id); !errors.Is(err, repo.ErrCorrupt) {
					t.Fatalf("err = %v, want repo.ErrCorrupt", err)
				}
			})
		}
		// A corrupt line item is refused by the recomputing script, not summed.
		d := mustCreateQuote(t, q, "acme")
		storetest.HSet(t, s, q.itemsKey(d.ID), map[string]string{"bad": "{not json"})
		if _, err := q.PutItem(ctx, "acme", d.ID, 1, quotes.Item{ID: "ok", SKU: "S", Quantity: 1, UnitPriceMinor: 1}); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("err = %v, want repo.ErrCorrupt", err)
		}
	})
}

// TestQuoteCreateWithPlannedID: creating twice under one planned id returns the first draft;
// ids are the tenant's own (its drafts live under its tag), so another tenant's create under
// the same id makes that tenant's draft and leaves the first alone.
func TestQuoteCreateWithPlannedID(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 100)
		in := quotes.NewQuote{ID: quotes.NewID(), Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "USD"}
		a, err := q.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := q.Create(ctx, in)
		if err != nil || *a != *b {
			t.Fatalf("second create: %+v vs %+v, %v", b, a, err)
		}
		in.Tenant, in.CustomerID = "other", "c2"
		if c, err := q.Create(ctx, in); err != nil || c.Tenant != "other" || c.CustomerID != "c2" {
			t.Fatalf("another tenant's create under the id: %+v %v", c, err)
		}
		if got, err := q.Get(ctx, "acme", in.ID); err != nil || *got != *a {
			t.Fatalf("the first draft after another tenant's create: %+v %v", got, err)
		}
	})
}

// summaryKey and itemsKey are the keys of a draft of the tests' tenant, acme.
func (r *Store) summaryKey(id string) string { return r.quoteKeys("acme", id)[0] }
func (r *Store) itemsKey(id string) string   { return r.quoteKeys("acme", id)[1] }

// quotaKey is the tenant's quota set of live drafts.
func (r *Store) quotaKey(tenant string) string { return r.quoteKeys(tenant, "")[2] }
