package quotestore

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestQuoteMetrics checks the counters of the quote store: transitions by outcome, CAS
// conflicts, deletes of absent drafts; no reply a caller did not expect.
func TestQuoteMetrics(t *testing.T) {
	t.Parallel()
	meter, counters := storetest.Meter(t)
	m := repo.NewMetrics(meter)
	s := testredis.Open(t, testredis.Backends()[0])
	q, err := New(s, Options{Prefix: testredis.Prefix(t), Hasher: storetest.Hasher(t), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d := mustCreateQuote(t, q, "acme")
	_, _ = q.Patch(ctx, "acme", d.ID, 1, quotes.Patch{TaxMinor: ptr[int64](1)})
	_, _ = q.Patch(ctx, "acme", d.ID, 1, quotes.Patch{TaxMinor: ptr[int64](2)}) // stale
	_ = q.Delete(ctx, "other", d.ID)                                            // another tenant's: left alone
	_ = q.Delete(ctx, "acme", d.ID)
	_ = q.Delete(ctx, "acme", d.ID)
	storetest.WantCounters(t, counters(), map[string]int64{
		"hashgate_repo_transitions object=quote outcome=ok transition=create":     1,
		"hashgate_repo_transitions object=quote outcome=ok transition=patch":      1,
		"hashgate_repo_transitions object=quote outcome=stale transition=patch":   1,
		"hashgate_repo_events event=cas_conflict object=quote":                    1,
		"hashgate_repo_transitions object=quote outcome=ok transition=delete":     1,
		"hashgate_repo_transitions object=quote outcome=absent transition=delete": 2,
	})
}
