package tokenstore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
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
		r := newStore(t, s, prefix, 0, limit)
		now := time.Now()
		short := newToken("acme", now, 0)
		// 10 s: the 64 creates below must all run before it expires, on a loaded machine too
		short.IssuedAt, short.ExpiresAt = now.Add(-time.Second), now.Add(10*time.Second)
		if err := r.Create(ctx, short); err != nil {
			t.Fatal(err)
		}
		keysBefore := testredis.KeyCount(t, s, prefix)
		var mu sync.Mutex
		var wg sync.WaitGroup
		ok, refused := 0, 0
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := r.Create(ctx, newToken("acme", now.Add(time.Duration(i)*time.Millisecond), time.Hour))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					ok++
					return
				}
				refused++
				wantQuota(t, err, "tokens", limit)
			}()
		}
		wg.Wait()
		if ok != limit-1 || refused != 64-(limit-1) {
			t.Fatalf("%d created, %d refused; want %d and %d", ok, refused, limit-1, 64-(limit-1))
		}
		if n := testredis.KeyCount(t, s, prefix); n != keysBefore+ok {
			t.Fatalf("%d keys after %d creates (from %d): a refused create wrote", n, ok, keysBefore)
		}
		if err := r.Create(ctx, newToken("other", now, time.Hour)); err != nil {
			t.Fatalf("another tenant: %v", err)
		}
		time.Sleep(time.Until(short.ExpiresAt) + 300*time.Millisecond) // the short token expires: its place is free
		if err := r.Create(ctx, newToken("acme", time.Now(), time.Hour)); err != nil {
			t.Fatalf("create after an expiry: %v", err)
		}
		if n := zcard(t, s, r.indexKeys(r.tag("acme"))[0]); n != limit {
			t.Fatalf("the tenant's count is %d, want the %d live tokens", n, limit)
		}
		wantQuota(t, r.Create(ctx, newToken("acme", time.Now(), time.Hour)), "tokens", limit)
	})
}

// wantQuota checks (safe from any goroutine) err is the 429 quota-exceeded refusal naming quota and its limit.
func wantQuota(t *testing.T, err error, quota string, limit int) {
	t.Helper()
	e, ok := apperr.As(err)
	switch {
	case !ok || e.Kind != apperr.QuotaExceeded:
		t.Errorf("err = %v, want 429 quota-exceeded", err)
	case e.Extra["quota"] != quota || e.Extra["limit"] != limit || !strings.Contains(e.Detail, quota):
		t.Errorf("quota problem %+v: want quota %q and limit %d named", e, quota, limit)
	case e.RetryAfter <= 0:
		t.Errorf("quota problem without Retry-After: %+v", e)
	}
}

// zcard is the member count of a sorted set.
func zcard(t *testing.T, s *store.Store, key string) int {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Zcard().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
