package quotestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// walk reads every page of q (limit per page) and answers the ids in order.
func walk(t *testing.T, r *Store, q quotes.ListQuery, limit int) []string {
	t.Helper()
	q.Limit = limit
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("the walk does not end")
		}
		p, err := r.List(context.Background(), q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		if len(p.Items) > limit {
			t.Fatalf("page of %d for limit %d", len(p.Items), limit)
		}
		for _, d := range p.Items {
			ids = append(ids, d.ID)
		}
		if p.NextCursor == "" {
			return ids
		}
		q.Cursor = p.NextCursor
	}
}

// newestFirst is the list order: last update, newest first, then id (descending).
func newestFirst(a, b quotes.Quote) int {
	return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(b.ID, a.ID))
}

func (r *Store) listKeys(tenant string) []string { return r.indexKeys(r.Hasher.TenantTag(tenant)) }

// Every filter, alone and combined, on drafts created, patched (customer and channel moved),
// changed, submitted and deleted: each walk (pages of 2 and of 100) answers exactly the
// tenant's live drafts that match, newest first by last update, and the indexes list exactly
// the live drafts.
func TestQuoteListFilters(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newTestQuotes(t, s, prefix, 10)
		var ids []string
		for i := range 12 {
			d, err := r.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: fmt.Sprintf("c%d", i%3), SalesChannel: []string{"web", "partner"}[i%2], Currency: "EUR"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.ID)
			time.Sleep(2 * time.Millisecond) // distinct update times, mostly (ties order by id)
		}
		for range 2 { // another tenant's drafts, same customer: never listed for acme
			if _, err := r.Create(ctx, quotes.NewQuote{Tenant: "other", CustomerID: "c0", SalesChannel: "web", Currency: "EUR"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Patch(ctx, "acme", ids[0], quotes.AnyVersion, quotes.Patch{CustomerID: ptr("c9"), SalesChannel: ptr("shop")}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids[1:3] {
			if _, err := r.Submit(ctx, "acme", id, quotes.AnyVersion); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.PutItem(ctx, "acme", ids[3], quotes.AnyVersion, quotes.Item{ID: "a", SKU: "S", Quantity: 2, UnitPriceMinor: 5}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Patch(ctx, "acme", ids[6], quotes.AnyVersion, quotes.Patch{TaxMinor: ptr[int64](1)}); err != nil {
			t.Fatal(err)
		}
		if err := r.Delete(ctx, "acme", ids[4]); err != nil {
			t.Fatal(err)
		}
		var live []quotes.Quote
		for _, id := range ids {
			if d, err := r.Get(ctx, "acme", id); err == nil {
				live = append(live, *d)
			} else if !errors.Is(err, apperr.NotFound) {
				t.Fatal(err)
			}
		}
		slices.SortFunc(live, newestFirst)
		mid := live[len(live)/2].UpdatedAt
		for _, q := range []quotes.ListQuery{
			{},
			{CustomerID: "c0"},
			{CustomerID: "c9"},
			{CustomerID: "nobody"},
			{Statuses: []string{quotes.Draft}},
			{Statuses: []string{quotes.Submitted}},
			{Statuses: []string{quotes.Draft, quotes.Submitted}},
			{SalesChannel: "web"},
			{SalesChannel: "shop"},
			{CustomerID: "c1", Statuses: []string{quotes.Submitted}},
			{CustomerID: "c2", Statuses: []string{quotes.Draft}},
			{SalesChannel: "partner", Statuses: []string{quotes.Draft}},
			{CustomerID: "c0", SalesChannel: "partner"},
			{UpdatedSince: mid},
			{CustomerID: "c0", UpdatedSince: mid},
			{Statuses: []string{quotes.Draft}, UpdatedSince: mid},
		} {
			q.Tenant = "acme"
			var want []string
			for _, d := range live {
				if (q.CustomerID == "" || d.CustomerID == q.CustomerID) && (q.SalesChannel == "" || d.SalesChannel == q.SalesChannel) &&
					(len(q.Statuses) == 0 || slices.Contains(q.Statuses, d.Status)) && !d.UpdatedAt.Before(q.UpdatedSince) {
					want = append(want, d.ID)
				}
			}
			for _, limit := range []int{2, 100} {
				if got := walk(t, r, q, limit); !slices.Equal(got, want) {
					t.Errorf("%+v, pages of %d:\n got %v\nwant %v", q, limit, got, want)
				}
			}
		}
		storetest.IndexesMatchLive(t, s, r.listKeys("acme"))
		storetest.IndexesMatchLive(t, s, r.listKeys("other"))
	})
}

// A cursor answers only the query it was issued for: other filters, another tenant's value, a
// forged or truncated one are 400 naming the cursor.
func TestQuoteListRefusesForeignCursor(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	r := newTestQuotes(t, s, testredis.Prefix(t), 10)
	for range 3 {
		mustCreateQuote(t, r, "acme")
	}
	ctx := context.Background()
	p, err := r.List(ctx, quotes.ListQuery{Tenant: "acme", CustomerID: "cust-1", Limit: 1})
	if err != nil || p.NextCursor == "" {
		t.Fatalf("first page: %+v %v", p, err)
	}
	for name, q := range map[string]quotes.ListQuery{
		"other customer": {CustomerID: "cust-2", Cursor: p.NextCursor},
		"filter added":   {CustomerID: "cust-1", Statuses: []string{quotes.Draft}, Cursor: p.NextCursor},
		"filter dropped": {Cursor: p.NextCursor},
		"truncated":      {CustomerID: "cust-1", Cursor: p.NextCursor[:len(p.NextCursor)/2]},
		"forged":         {CustomerID: "cust-1", Cursor: "cS5BQUFBQUFBQSB8MDAwMDAwMDAwMDAwMXxxXzE"},
	} {
		q.Tenant, q.Limit = "acme", 1
		_, err := r.List(ctx, q)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.Validation || len(ae.Fields) != 1 || ae.Fields[0].Parameter != "query:cursor" {
			t.Errorf("%s: %v, want a 400 naming the cursor", name, err)
		}
	}
	if got := walk(t, r, quotes.ListQuery{Tenant: "acme", CustomerID: "cust-1"}, 1); len(got) != 3 {
		t.Fatalf("walk = %v", got)
	}
}

// Drafts that expire leave the indexes with their quota members: a list after the expiry
// answers none of them (not even before a prune reached them), and the indexes and the quota
// set are empty after it. The drafts are made with an hour's TTL and then written once with a
// second's (a store configured so), which is how a draft's expiry moves.
func TestQuoteListExpiredLeaveIndexes(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newTestQuotes(t, s, prefix, 10)
		short, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Second, MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range 5 {
			ids = append(ids, mustCreateQuote(t, r, "acme").ID)
		}
		if err := r.Delete(ctx, "acme", ids[0]); err != nil {
			t.Fatal(err)
		}
		storetest.IndexesMatchLive(t, s, r.listKeys("acme"))
		if got := walk(t, r, quotes.ListQuery{Tenant: "acme"}, 2); len(got) != 4 {
			t.Fatalf("before expiry: %v", got)
		}
		for _, id := range ids[1:] {
			if _, err := short.Patch(ctx, "acme", id, quotes.AnyVersion, quotes.Patch{TaxMinor: ptr[int64](1)}); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); storetest.LiveKeys(t, s, prefix+":v1:quote:*") > 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the drafts did not expire")
			}
		}
		if got := walk(t, r, quotes.ListQuery{Tenant: "acme", CustomerID: "cust-1"}, 2); len(got) != 0 {
			t.Fatalf("after expiry: %v", got)
		}
		storetest.IndexesMatchLive(t, s, r.listKeys("acme"))
		if n := storetest.ZCard(t, s, r.quotaKey("acme")); n != 0 {
			t.Fatalf("quota set holds %d after the prune", n)
		}
	})
}

// The page walk under 64 concurrent writers creating, moving (customer changed) and deleting
// drafts: no walk answers a draft twice, and every walk answers every draft no writer touched
// during it, once, in order. Then the indexes list exactly the live drafts.
func TestQuoteListPageWalkUnderWriters(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !b.Real() {
			t.Skip("the embedded store: the real servers carry this one")
		}
		ctx := context.Background()
		r, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Hour, MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		create := func(customer string) *quotes.Quote {
			d, err := r.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: customer, SalesChannel: "web", Currency: "EUR"})
			if err != nil {
				t.Error(err)
			}
			return d
		}
		stable := map[string]quotes.Quote{} // no writer touches these
		for i := range 200 {
			d := create([]string{"c0", "c1"}[i%2])
			stable[d.ID] = *d
		}
		churn := make(chan string, 4096)
		for range 200 {
			churn <- create("c0").ID
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var writes atomic.Int64
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for {
					select {
					case <-stop:
						return
					default:
					}
					var err error
					switch op := rng.IntN(3); {
					case op == 0:
						if d := create([]string{"c0", "c1"}[rng.IntN(2)]); d != nil {
							select {
							case churn <- d.ID:
							default:
							}
						}
					default:
						select {
						case id := <-churn:
							if op == 1 {
								_, err = r.Patch(ctx, "acme", id, quotes.AnyVersion, quotes.Patch{CustomerID: ptr([]string{"c0", "c1"}[rng.IntN(2)])})
								select {
								case churn <- id:
								default:
								}
							} else {
								err = r.Delete(ctx, "acme", id)
							}
						default:
						}
					}
					if err != nil && !errors.Is(err, apperr.NotFound) {
						t.Error(err)
						return
					}
					writes.Add(1)
				}
			}()
		}
		walks := 0
		for _, q := range []quotes.ListQuery{{Tenant: "acme"}, {Tenant: "acme", CustomerID: "c1"}, {Tenant: "acme"}, {Tenant: "acme", CustomerID: "c0"}} {
			got := walk(t, r, q, 7)
			walks++
			seen := map[string]bool{}
			var stableSeen []string
			for _, id := range got {
				if seen[id] {
					t.Errorf("walk %+v answered %s twice", q, id)
				}
				seen[id] = true
				if d, ok := stable[id]; ok {
					stableSeen = append(stableSeen, id)
					if q.CustomerID != "" && d.CustomerID != q.CustomerID {
						t.Errorf("walk %+v answered %s of customer %s", q, id, d.CustomerID)
					}
				}
			}
			var want []quotes.Quote
			for _, d := range stable {
				if q.CustomerID == "" || d.CustomerID == q.CustomerID {
					want = append(want, d)
				}
			}
			slices.SortFunc(want, newestFirst)
			wantIDs := make([]string, len(want))
			for i, d := range want {
				wantIDs[i] = d.ID
			}
			if !slices.Equal(stableSeen, wantIDs) {
				t.Errorf("walk %+v answered %d of the %d drafts no writer touched, or out of order", q, len(stableSeen), len(want))
			}
		}
		close(stop)
		wg.Wait()
		if writes.Load() < 64 {
			t.Fatalf("only %d writes ran during %d walks", writes.Load(), walks)
		}
		t.Logf("%d walks during %d writes", walks, writes.Load())
		storetest.IndexesMatchLive(t, s, r.listKeys("acme"))
	})
}

// What the indexes cost on Redis 8: MEMORY USAGE of the coordinates hash and the four indexes
// over the drafts they list, with realistic value lengths (a 24-character customer id, a
// channel), under 1 KiB per draft.
func TestQuoteIndexMemoryPerDraft(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Named(t, "redis8"))
	ctx := context.Background()
	r := newTestQuotes(t, s, testredis.Prefix(t), 10)
	const n = 2000
	for i := range n {
		if _, err := r.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: fmt.Sprintf("customer-%014d", i%500),
			SalesChannel: []string{"web", "partner", "phone"}[i%3], Currency: "EUR"}); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for _, key := range r.listKeys("acme") {
		b, err := s.Client.Do(ctx, s.Client.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		total += b
	}
	per := total / n
	if per >= 1024 {
		t.Fatalf("the indexes hold %d bytes per draft", per)
	}
	t.Logf("indexes: %d bytes for %d drafts, %d bytes per draft", total, n, per)
}

// A page examines a bounded slice of the index (4 × its size): when the filters the index does
// not cover match little, pages come back short, even empty, each with a next cursor, and the
// walk still ends with exactly the matches.
func TestQuoteListShortPagesStillWalk(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	ctx := context.Background()
	r := newTestQuotes(t, s, testredis.Prefix(t), 10)
	first := mustCreateQuote(t, r, "acme")
	if _, err := r.Submit(ctx, "acme", first.ID, quotes.AnyVersion); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		mustCreateQuote(t, r, "acme")
	}
	q := quotes.ListQuery{Tenant: "acme", CustomerID: "cust-1", Statuses: []string{quotes.Submitted}, Limit: 1}
	p, err := r.List(ctx, q)
	if err != nil || len(p.Items) != 0 || p.NextCursor == "" {
		t.Fatalf("first page: %d items, next %q, %v: want an empty page with a next cursor", len(p.Items), p.NextCursor, err)
	}
	if got := walk(t, r, q, 1); !slices.Equal(got, []string{first.ID}) {
		t.Fatalf("walk = %v, want only %s", got, first.ID)
	}
}
