package idemstore

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestIdempotencyMetrics checks the counters of the idempotency store: replays, mismatches,
// completions that lost their claim; no reply a caller did not expect.
func TestIdempotencyMetrics(t *testing.T) {
	t.Parallel()
	meter, counters := storetest.Meter(t)
	m := repo.NewMetrics(meter)
	s := testredis.Open(t, testredis.Backends()[0])
	x, err := New(s, Options{Prefix: testredis.Prefix(t), Hasher: storetest.Hasher(t), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sc, id := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "metrics-key"}, quotes.NewID()
	cl, _ := x.Claim(ctx, sc, "h1", id)
	_ = x.Complete(ctx, cl, idempotency.Response{Status: 201, Body: []byte("{}")})
	for range 2 { // no longer its claim: refused, counted
		_ = x.Complete(ctx, cl, idempotency.Response{Status: 201, Body: []byte("{}")})
	}
	_, _ = x.Claim(ctx, sc, "h1", id)
	_, _ = x.Claim(ctx, sc, "h2", id)
	storetest.WantCounters(t, counters(), map[string]int64{
		"hashgate_repo_events event=replay object=idempotency":     1,
		"hashgate_repo_events event=mismatch object=idempotency":   1,
		"hashgate_repo_events event=lost_lease object=idempotency": 2,
	})
}
