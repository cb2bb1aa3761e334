package quotestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkQuoteWrites compares a PATCH (no item scan) with an item PUT, whose script
// recomputes the subtotal over every line, at 1 and at 100 lines. It runs on standalone Redis 8
// when HASHGATE_TEST_REDIS8 is set, else on the embedded store.
func BenchmarkQuoteWrites(b *testing.B) {
	backend := testredis.Backends()[0]
	if r8 := testredis.Backends()[1]; r8.URL != "" {
		backend = r8
	}
	s := testredis.Open(b, backend)
	prefix := testredis.Prefix(b)
	ctx := context.Background()
	q, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(b)})
	if err != nil {
		b.Fatal(err)
	}
	for _, lines := range []int{1, 100} {
		d, err := q.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		if err != nil {
			b.Fatal(err)
		}
		v := d.StateVersion
		for i := range lines {
			if _, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: fmt.Sprint("i", i), SKU: "S", Quantity: 2, UnitPriceMinor: 999}); err != nil {
				b.Fatal(err)
			}
			v++
		}
		b.Run(fmt.Sprintf("%s/patch/lines=%d", backend.Name, lines), func(b *testing.B) {
			for b.Loop() {
				if _, err := q.Patch(ctx, "acme", d.ID, v, quotes.Patch{TaxMinor: &v}); err != nil {
					b.Fatal(err)
				}
				v++
			}
		})
		b.Run(fmt.Sprintf("%s/item_put/lines=%d", backend.Name, lines), func(b *testing.B) {
			for b.Loop() {
				if _, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 1 + v%5, UnitPriceMinor: 999}); err != nil {
					b.Fatal(err)
				}
				v++
			}
		})
		_ = q.Delete(ctx, "acme", d.ID)
	}
}
