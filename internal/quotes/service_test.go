package quotes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/quotestore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newService(t *testing.T, s *store.Store, prefix string, maxItems int) *quotes.Service {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	r, err := quotestore.New(s, quotestore.Options{Prefix: prefix, Hasher: h, TTL: time.Hour, MaxItems: maxItems})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := quotes.New(r, idempotency.New(nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func render(*quotes.Quote) (idempotency.Response, error) {
	return idempotency.Response{Status: 201}, nil
}

func mustCreate(t *testing.T, q *quotes.Service, tenant string) *quotes.Quote {
	t.Helper()
	var d *quotes.Quote
	_, err := q.Create(context.Background(), quotes.NewQuote{Tenant: tenant, CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"},
		idempotency.Key{}, func(q *quotes.Quote) (idempotency.Response, error) {
			d = q
			return idempotency.Response{Status: 201}, nil
		})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return d
}

func ptr[T any](v T) *T { return &v }

func wantKind(t *testing.T, err error, k *apperr.Kind) {
	t.Helper()
	if !errors.Is(err, k) {
		t.Fatalf("err = %v, want %s", err, k.Slug)
	}
}

// TestQuoteBounds: the draft's rules (here) and the bounds its scripts enforce (repo) refuse
// every bad write, on every backend, and leave the draft as the good writes left it.
func TestQuoteBounds(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newService(t, s, prefix, 3)
		d := mustCreate(t, q, "acme")
		v := d.StateVersion
		for i := range 3 {
			if _, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: fmt.Sprint("i", i), SKU: "S", Quantity: 1, UnitPriceMinor: 1}); err != nil {
				t.Fatal(err)
			}
			v++
		}
		tests := []struct {
			name string
			call func() error
			want *apperr.Kind
		}{
			{"item over the bound", func() error {
				_, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i3", SKU: "S", Quantity: 1, UnitPriceMinor: 1})
				return err
			}, apperr.BoundExceeded},
			{"line total over 2^53", func() error {
				_, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 2, UnitPriceMinor: quotes.MaxAmountMinor})
				return err
			}, apperr.BoundExceeded},
			{"subtotal over 2^53", func() error {
				_, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 1, UnitPriceMinor: quotes.MaxAmountMinor})
				return err
			}, apperr.BoundExceeded},
			{"unit price over the bound", func() error {
				_, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 1, UnitPriceMinor: quotes.MaxAmountMinor + 1})
				return err
			}, apperr.BoundExceeded},
			{"tax makes total overflow", func() error {
				_, err := q.Patch(ctx, "acme", d.ID, v, quotes.Patch{TaxMinor: ptr(quotes.MaxAmountMinor)})
				return err
			}, apperr.BoundExceeded},
			{"negative quantity", func() error {
				_, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: -1, UnitPriceMinor: 1})
				return err
			}, apperr.Validation},
			{"negative discount", func() error {
				_, err := q.Patch(ctx, "acme", d.ID, v, quotes.Patch{DiscountMinor: ptr[int64](-1)})
				return err
			}, apperr.Validation},
			{"discount above subtotal", func() error {
				_, err := q.Patch(ctx, "acme", d.ID, v, quotes.Patch{DiscountMinor: ptr[int64](4)})
				return err
			}, apperr.Unprocessable},
			{"unknown currency", func() error {
				_, err := q.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "XYZ"}, idempotency.Key{}, render)
				return err
			}, apperr.Unprocessable},
			{"stale version", func() error {
				_, err := q.Patch(ctx, "acme", d.ID, v-1, quotes.Patch{TaxMinor: ptr[int64](1)})
				return err
			}, apperr.PreconditionFailed},
			{"unknown quote", func() error {
				_, err := q.Patch(ctx, "acme", quotes.NewID(), 1, quotes.Patch{TaxMinor: ptr[int64](1)})
				return err
			}, apperr.NotFound},
			{"malformed id", func() error { _, err := q.Get(ctx, "acme", "q_{x}"); return err }, apperr.NotFound},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { wantKind(t, tt.call(), tt.want) })
		}
		// Nothing was half-written: the draft is as the three good writes left it.
		got, err := q.Get(ctx, "acme", d.ID)
		if err != nil || got.StateVersion != v || got.SubtotalMinor != 3 || got.ItemCount != 3 {
			t.Fatalf("after refusals: %+v %v", got, err)
		}
		// At the bound an existing line can still be replaced; the largest exact amount passes.
		got, err = q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 1, UnitPriceMinor: quotes.MaxAmountMinor - 2})
		if err != nil || got.SubtotalMinor != quotes.MaxAmountMinor || got.TotalMinor != quotes.MaxAmountMinor {
			t.Fatalf("max amount: %+v %v", got, err)
		}
	})
}
