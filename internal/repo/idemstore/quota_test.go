package idemstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestIdempotencyKeyQuota: GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS is exact under 64 concurrent
// claims of distinct keys; a refused claim writes nothing and answers 429 quota-exceeded; a
// released claim and an expired marker free their place, so the count equals the live markers.
func TestIdempotencyKeyQuota(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		const limit = 10
		// a 10 s TTL: the 64 claims below all run within it, on a loaded machine too
		x, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: 10 * time.Second,
			Lease: 100 * time.Millisecond, MaxPerTenant: limit})
		if err != nil {
			t.Fatal(err)
		}
		h := idempotency.RequestHash("createQuote", []byte(`{}`))
		claim := func(key string) (*idempotency.Claim, error) {
			return x.Claim(ctx, idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: key}, h, quotes.NewID())
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var held []*idempotency.Claim
		refused := 0
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, err := claim(fmt.Sprintf("key-%d", i))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					held = append(held, cl)
					return
				}
				refused++
				storetest.WantQuota(t, err, "idempotency keys", limit)
			}()
		}
		wg.Wait()
		if len(held) != limit || refused != 64-limit {
			t.Fatalf("%d claimed, %d refused; want %d and %d", len(held), refused, limit, 64-limit)
		}
		markers := func() int { t.Helper(); return testredis.KeyCount(t, s, prefix+":v1:idem") }
		if n := markers(); n != limit {
			t.Fatalf("%d markers after %d claims: a refused claim wrote", n, limit)
		}
		if err := x.Release(ctx, held[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := claim("after-release"); err != nil {
			t.Fatalf("claim after a release: %v", err)
		}
		_, err = claim("over")
		storetest.WantQuota(t, err, "idempotency keys", limit)
		time.Sleep(10200 * time.Millisecond) // every marker expires: the count follows
		if _, err := claim("after-expiry"); err != nil {
			t.Fatalf("claim after the expiry: %v", err)
		}
		if n, live := storetest.ZCard(t, s, x.quotaKey("acme")), markers(); n != live || live != 1 {
			t.Fatalf("the tenant's count is %d with %d live markers, want both 1", n, live)
		}
	})
}

// quotaKey is the tenant's set of live markers (member <operation>:<keyHash>, score the
// marker's expiry in ms): its Idempotency-Key quota.
func (r *Store) quotaKey(tenant string) string {
	return r.Keys.Key("quota", r.Hasher.TenantTag(tenant), "idem")
}
