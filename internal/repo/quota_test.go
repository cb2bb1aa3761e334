package repo

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

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
		time.Sleep(1500 * time.Millisecond) // the short token expires: its place is free
		if err := r.Create(ctx, newToken("acme", time.Now(), time.Hour)); err != nil {
			t.Fatalf("create after an expiry: %v", err)
		}
		if n := zcard(t, s, r.indexKeys(r.tag("acme"))[0]); n != limit {
			t.Fatalf("the tenant's count is %d, want the %d live tokens", n, limit)
		}
		wantQuota(t, r.Create(ctx, newToken("acme", time.Now(), time.Hour)), "tokens", limit)
	})
}

// liveObjects counts the test's live keys matching pattern (SCAN MATCH on every node) whose
// name does not end in one of the suffixes (the second keys of an object: items, history).
func liveObjects(t *testing.T, s *store.Store, pattern string, suffixes ...string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, node := range s.Client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatal(err)
			}
		keys:
			for _, k := range e.Elements {
				for _, s := range suffixes {
					if strings.HasSuffix(k, s) {
						continue keys
					}
				}
				n++
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return n
}

// raceCreates runs 64 creates at once and counts those made and those refused; every refusal
// must be the quota's.
func raceCreates(t *testing.T, quota string, limit int, create func(i int) error) (ok, refused int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := create(i)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				return
			}
			refused++
			wantQuota(t, err, quota, limit)
		}()
	}
	wg.Wait()
	return ok, refused
}

// TestCaseQuota: GATEWAY_TENANT_MAX_CASES is exact under 64 concurrent creates; a refused
// create writes nothing (no case, no history, no due-index entry) and answers 429
// quota-exceeded naming the quota; a transition that renews the open TTL keeps the case
// counted, and a case that expires (its short resolved TTL included) frees its place, so the
// count equals the live cases.
func TestCaseQuota(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		const limit = 10
		repo := func(open, resolved time.Duration) *Cases {
			c, err := NewCases(s, CaseOptions{Prefix: prefix, Hasher: qcHasher(t), OpenTTL: open, ResolvedTTL: resolved, MaxPerTenant: limit})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		short, long, resolving := repo(1200*time.Millisecond, time.Hour), repo(time.Hour, time.Hour), repo(time.Hour, 1200*time.Millisecond)
		due := func() time.Time { return time.Now().Add(time.Second) }
		mustCreateCase(t, short, "acme", due()) // expires
		renewed := mustCreateCase(t, short, "acme", due())
		if _, err := long.Escalate(ctx, change(renewed, "renewed")); err != nil {
			t.Fatal(err) // now open for an hour: still counted after the first expires
		}
		resolved := mustCreateCase(t, long, "acme", due())
		if _, err := resolving.Resolve(ctx, change(resolved, "done")); err != nil {
			t.Fatal(err) // expires with its short resolved TTL
		}
		keysBefore := testredis.KeyCount(t, s, prefix)
		ok, refused := raceCreates(t, "cases", limit, func(int) error {
			_, err := long.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "r", Actor: "a"})
			return err
		})
		if ok != limit-3 || refused != 64-(limit-3) {
			t.Fatalf("%d created, %d refused; want %d and %d", ok, refused, limit-3, 64-(limit-3))
		}
		if n := testredis.KeyCount(t, s, prefix); n != keysBefore+2*ok {
			t.Fatalf("%d keys after %d creates (from %d): a refused create wrote", n, ok, keysBefore)
		}
		if n := zcard(t, s, long.dueKey(long.TenantTag("acme"))); n != 3+ok {
			t.Fatalf("the due index holds %d cases after %d creates: a refused create wrote", n, 3+ok)
		}
		mustCreateCase(t, long, "other", due())
		live := func() int { t.Helper(); return liveObjects(t, s, prefix+":v1:case:*", ":history") - 1 } // less other's
		time.Sleep(1500 * time.Millisecond)                                                              // two cases expire: their places are free
		mustCreateCase(t, long, "acme", due())
		mustCreateCase(t, long, "acme", due())
		_, err := long.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: due(), Reason: "r", Actor: "a"})
		wantQuota(t, err, "cases", limit)
		if n, l := zcard(t, s, long.quotaKey("acme")), live(); n != limit || l != limit {
			t.Fatalf("the tenant's count is %d with %d live cases, want both %d", n, l, limit)
		}
	})
}
