package quotestore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// While the tenant's slot moves between masters, the indexes first (so that a page runs on
// the new master while most drafts are still on the old one) and the drafts a few at a time,
// every list answers either the whole list or Redis trouble (503): never a page short of a
// live draft, and never a write that drops one from the indexes. After the move the indexes
// list exactly the drafts.
func TestQuoteListDuringSlotMigration(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	s := testredis.Open(t, testredis.Backend{Name: "migrating", Env: testredis.EnvCluster, URL: cl.URL()})
	ctx := context.Background()
	r := newTestQuotes(t, s, testredis.Prefix(t), 10)
	for range 24 {
		mustCreateQuote(t, r, "acme")
	}
	want := walk(t, r, quotes.ListQuery{Tenant: "acme"}, 100)
	if len(want) != 24 {
		t.Fatalf("before the move: %d drafts", len(want))
	}
	keys := r.quoteKeys("acme", want[0])
	slot, err := cl.KeySlot(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	from, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	indexesFirst := func(left []string) []string {
		out := slices.Clone(left)
		slices.SortStableFunc(out, func(a, b string) int {
			rank := func(k string) int {
				if strings.Contains(k, ":quoteidx:") || strings.Contains(k, ":quota:") {
					return 0
				}
				return 1
			}
			return rank(a) - rank(b)
		})
		return out
	}
	unavailable, whole := 0, 0
	list := func(int) {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		p, err := r.List(lctx, quotes.ListQuery{Tenant: "acme", Limit: 100})
		switch {
		case err != nil && store.IsUnavailable(err):
			unavailable++
		case err != nil:
			t.Errorf("list during the move: %v", err)
		default:
			var got []string
			for _, d := range p.Items {
				got = append(got, d.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("list during the move answered %d drafts: %v", len(got), got)
			}
			whole++
		}
	}
	moved, err := cl.Migrate(ctx, testredis.Migration{Slot: slot, From: from, To: (from + 1) % len(cl.Nodes), Batch: 3, Order: indexesFirst, After: list})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := walk(t, r, quotes.ListQuery{Tenant: "acme"}, 100); !slices.Equal(got, want) {
		t.Fatalf("after the move: %v", got)
	}
	storetest.IndexesMatchLive(t, s, r.listKeys("acme"))
	t.Logf("%d keys moved; lists during the move: %d whole, %d unavailable", moved, whole, unavailable)
}
