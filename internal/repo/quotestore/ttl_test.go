package quotestore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Every write (item put, item delete, patch, submit) gives both keys of a quote, the summary
// and its items, the full TTL again, together: a draft lives the TTL after its last write, and
// its items never outlive it. Each write starts from keys whose TTL was cut to a minute.
func TestQuoteTTLSlidesOnEveryWriteForBothKeys(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q := newTestQuotes(t, s, prefix, 10)
		d := mustCreateQuote(t, q, "acme")
		var err error
		if d, err = q.PutItem(ctx, "acme", d.ID, d.StateVersion, quotes.Item{ID: "a", SKU: "S", Quantity: 1, UnitPriceMinor: 100}); err != nil {
			t.Fatal(err)
		}
		cut := func() {
			t.Helper()
			for _, k := range []string{q.summaryKey(d.ID), q.itemsKey(d.ID)} {
				if err := s.Client.Do(ctx, s.Client.B().Pexpire().Key(k).Milliseconds(60_000).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		check := func(write string) {
			t.Helper()
			sum, items := storetest.PTTL(t, s, q.summaryKey(d.ID)), storetest.PTTL(t, s, q.itemsKey(d.ID))
			if sum < 59*time.Minute || items < 59*time.Minute {
				t.Fatalf("after %s: summary TTL %v, items TTL %v, want both back at the quote TTL (1h)", write, sum, items)
			}
			if diff := sum - items; diff > time.Second || diff < -time.Second {
				t.Fatalf("after %s: summary TTL %v and items TTL %v differ", write, sum, items)
			}
		}
		for _, w := range []struct {
			name string
			run  func() (*quotes.Quote, error)
		}{
			{"item put", func() (*quotes.Quote, error) {
				return q.PutItem(ctx, "acme", d.ID, d.StateVersion, quotes.Item{ID: "b", SKU: "S", Quantity: 2, UnitPriceMinor: 100})
			}},
			{"item delete", func() (*quotes.Quote, error) { return q.DeleteItem(ctx, "acme", d.ID, "b", d.StateVersion) }},
			{"patch", func() (*quotes.Quote, error) {
				return q.Patch(ctx, "acme", d.ID, d.StateVersion, quotes.Patch{TaxMinor: ptr[int64](5)})
			}},
			{"submit", func() (*quotes.Quote, error) { return q.Submit(ctx, "acme", d.ID, d.StateVersion) }},
		} {
			cut()
			if d, err = w.run(); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			check(w.name)
		}
	})
}

// A quote nobody writes is gone after its TTL: both keys, and reads answer not found.
func TestQuoteExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Second, MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		d := mustCreateQuote(t, q, "acme")
		if _, err := q.PutItem(ctx, "acme", d.ID, d.StateVersion, quotes.Item{ID: "a", SKU: "S", Quantity: 1, UnitPriceMinor: 100}); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			n, err := s.Client.Do(ctx, s.Client.B().Exists().Key(q.summaryKey(d.ID)).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.Client.Do(ctx, s.Client.B().Exists().Key(q.itemsKey(d.ID)).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && m == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s the quote's keys still exist (summary %d, items %d)", n, m)
			}
		}
		if _, err := q.Get(ctx, "acme", d.ID); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get after expiry: %v", err)
		}
	})
}
