package casestore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestCaseMetrics checks the counters of the case store: transitions by outcome (the
// refusal at the highest level included); no reply a caller did not expect.
func TestCaseMetrics(t *testing.T) {
	t.Parallel()
	meter, counters := storetest.Meter(t)
	m := repo.NewMetrics(meter)
	s := testredis.Open(t, testredis.Backends()[0])
	c, err := New(s, Options{Prefix: testredis.Prefix(t), Hasher: storetest.Hasher(t), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
	for range 4 {
		_, _ = c.Escalate(ctx, change(k, "r"))
	}
	storetest.WantCounters(t, counters(), map[string]int64{
		"hashgate_repo_transitions object=case outcome=ok transition=create":               1,
		"hashgate_repo_transitions object=case outcome=ok transition=escalate":             3,
		"hashgate_repo_transitions object=case outcome=max_escalation transition=escalate": 1,
	})
}
