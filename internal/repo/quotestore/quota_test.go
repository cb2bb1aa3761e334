package quotestore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestQuoteQuota: GATEWAY_TENANT_MAX_QUOTES is exact under 64 concurrent creates; a refused
// create writes nothing and answers 429 quota-exceeded naming the quota; another tenant is not
// affected; a write that renews a draft's TTL keeps it counted, an expired draft and a deleted
// one free their place, so the count equals the live drafts.
func TestQuoteQuota(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		const limit = 10
		repo := func(ttl time.Duration) *Store {
			q, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: ttl, MaxPerTenant: limit})
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		// 10 s: the 64 creates below must all run before the first draft expires, on a loaded
		// machine too
		short, long := repo(10*time.Second), repo(time.Hour)
		expires := time.Now().Add(10 * time.Second)
		mustCreateQuote(t, short, "acme") // expires
		renewed := mustCreateQuote(t, short, "acme")
		if _, err := long.Patch(ctx, "acme", renewed.ID, -1, quotes.Patch{CustomerID: ptr("cust-2")}); err != nil {
			t.Fatal(err) // now lives an hour: still counted after the first expires
		}
		keysBefore := testredis.KeyCount(t, s, prefix)
		ok, refused := storetest.RaceCreates(t, "quotes", limit, func(int) error {
			_, err := long.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
			return err
		})
		if ok != limit-2 || refused != 64-(limit-2) {
			t.Fatalf("%d created, %d refused; want %d and %d", ok, refused, limit-2, 64-(limit-2))
		}
		if n := testredis.KeyCount(t, s, prefix); n != keysBefore+ok {
			t.Fatalf("%d keys after %d creates (from %d): a refused create wrote", n, ok, keysBefore)
		}
		mustCreateQuote(t, long, "other")
		live := func() int { t.Helper(); return storetest.LiveKeys(t, s, prefix+":v1:quote:*", ":items") - 1 } // less other's
		time.Sleep(time.Until(expires) + 300*time.Millisecond)                                                 // the first draft expires: its place is free
		last := mustCreateQuote(t, long, "acme")
		_, err := long.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		storetest.WantQuota(t, err, "quotes", limit)
		if n, l := storetest.ZCard(t, s, long.quotaKey("acme")), live(); n != limit || l != limit {
			t.Fatalf("the tenant's count is %d with %d live drafts, want both %d", n, l, limit)
		}
		if err := long.Delete(ctx, "acme", last.ID); err != nil {
			t.Fatal(err)
		}
		if n, l := storetest.ZCard(t, s, long.quotaKey("acme")), live(); n != limit-1 || l != limit-1 {
			t.Fatalf("after a delete the count is %d with %d live drafts, want both %d", n, l, limit-1)
		}
		mustCreateQuote(t, long, "acme") // the deleted draft's place
		_, err = long.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		storetest.WantQuota(t, err, "quotes", limit)
	})
}
