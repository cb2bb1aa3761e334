package casestore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

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
		repo := func(open, resolved time.Duration) *Store {
			c, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), OpenTTL: open, ResolvedTTL: resolved, MaxPerTenant: limit})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		// the short TTLs outlast the set-up and the race on a loaded machine (creates are scripts
		// of some 40 commands); the sleep below waits for them from the first create
		const shortTTL = 4 * time.Second
		short, long, resolving := repo(shortTTL, time.Hour), repo(time.Hour, time.Hour), repo(time.Hour, shortTTL)
		start := time.Now()
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
		ok, refused := storetest.RaceCreates(t, "cases", limit, func(int) error {
			_, err := long.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "r", Actor: "a"})
			return err
		})
		// the two short-lived cases free their places when they expire: exact unless that
		// happened during the race (a loaded shared Redis can take seconds over 64 creates)
		want := limit - 3
		if time.Since(start) >= shortTTL {
			want = min(max(ok, want), limit-1)
			t.Logf("the race outlasted the short TTL: %d created (between %d and %d)", ok, limit-3, limit-1)
		}
		if ok != want || refused != 64-want {
			t.Fatalf("%d created, %d refused; want %d and %d", ok, refused, want, 64-want)
		}
		time.Sleep(time.Until(start.Add(shortTTL + 300*time.Millisecond))) // the two short-lived cases expire: their places are free
		if n := testredis.KeyCount(t, s, prefix); n != keysBefore+2*ok-4 {
			t.Fatalf("%d keys after %d creates (from %d, 4 expired): a refused create wrote", n, ok, keysBefore)
		}
		if n := storetest.ZCard(t, s, long.dueKey(long.TenantTag("acme"))); n != 3+ok {
			t.Fatalf("the due index holds %d cases after %d creates: a refused create wrote", n, 3+ok)
		}
		mustCreateCase(t, long, "other", due())
		live := func() int { t.Helper(); return storetest.LiveKeys(t, s, prefix+":v1:case:*", ":history") - 1 } // less other's
		for range limit - 1 - ok {                                                                              // the renewed case and the race's are live: fill the quota
			mustCreateCase(t, long, "acme", due())
		}
		_, err := long.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: due(), Reason: "r", Actor: "a"})
		storetest.WantQuota(t, err, "cases", limit)
		if n, l := storetest.ZCard(t, s, long.quotaKey("acme")), live(); n != limit || l != limit {
			t.Fatalf("the tenant's count is %d with %d live cases, want both %d", n, l, limit)
		}
	})
}
