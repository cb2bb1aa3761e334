package repo

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestTokenQuota: GATEWAY_TENANT_MAX_TOKENS is exact under 64 concurrent creates, a refused
// create writes nothing and answers 429 quota-exceeded naming the quota, another tenant is not
// affected, and an expired token frees its place (the count is the live tokens).
func TestTokenQuota(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		const limit = 10
		r := newTokensRepo(t, s, prefix, 0, limit)
		now := time.Now()
		short := newToken("acme", now, 0)
		short.IssuedAt, short.ExpiresAt = now.Add(-time.Second), now.Add(1200*time.Millisecond)
		if err := r.Create(ctx, short); err != nil {
			t.Fatal(err)
		}
		keysBefore := testredis.KeyCount(t, s, prefix)
		ok, refused := storetest.RaceCreates(t, "tokens", limit, func(i int) error {
			return r.Create(ctx, newToken("acme", now.Add(time.Duration(i)*time.Millisecond), time.Hour))
		})
		if ok != limit-1 || refused != 64-(limit-1) {
			t.Fatalf("%d created, %d refused; want %d and %d", ok, refused, limit-1, 64-(limit-1))
		}
		if n := testredis.KeyCount(t, s, prefix); n != keysBefore+ok {
			t.Fatalf("%d keys after %d creates (from %d): a refused create wrote", n, ok, keysBefore)
		}
		if err := r.Create(ctx, newToken("other", now, time.Hour)); err != nil {
			t.Fatalf("another tenant: %v", err)
		}
		time.Sleep(1500 * time.Millisecond) // the short token expires: its place is free
		if err := r.Create(ctx, newToken("acme", time.Now(), time.Hour)); err != nil {
			t.Fatalf("create after an expiry: %v", err)
		}
		if n := storetest.ZCard(t, s, r.indexKeys(r.tag("acme"))[0]); n != limit {
			t.Fatalf("the tenant's count is %d, want the %d live tokens", n, limit)
		}
		storetest.WantQuota(t, r.Create(ctx, newToken("acme", time.Now(), time.Hour)), "tokens", limit)
	})
}
