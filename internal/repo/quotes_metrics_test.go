package repo

import (
	"context"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestQuoteCaseIdemMetrics checks the counters the issue asks for: transitions by type and
// outcome, CAS conflicts, idempotent replays and conflicts, reads by outcome.
func TestQuoteCaseIdemMetrics(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	m := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"))
	s := testredis.Open(t, testredis.Backends()[0])
	prefix := testredis.Prefix(t)
	ctx := context.Background()
	q, err := NewQuotes(s, QuoteOptions{Prefix: prefix, Hasher: qcHasher(t), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCases(s, CaseOptions{Prefix: prefix, Hasher: qcHasher(t), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	d := mustCreateQuote(t, q, "acme")
	_, _ = q.Patch(ctx, "acme", d.ID, 1, quotes.Patch{TaxMinor: ptr[int64](1)})
	_, _ = q.Patch(ctx, "acme", d.ID, 1, quotes.Patch{TaxMinor: ptr[int64](2)}) // stale
	k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
	for range 4 {
		_, _ = c.Escalate(ctx, change(k, "r"))
	}
	_ = q.Delete(ctx, "other", d.ID) // another tenant's: left alone
	_ = q.Delete(ctx, "acme", d.ID)
	_ = q.Delete(ctx, "acme", d.ID)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			sum, ok := mt.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				key := mt.Name
				for _, kv := range dp.Attributes.ToSlice() {
					key += " " + string(kv.Key) + "=" + kv.Value.AsString()
				}
				got[key] += dp.Value
			}
		}
	}
	want := map[string]int64{
		"hashgate_repo_transitions object=quote outcome=ok transition=patch":               1,
		"hashgate_repo_transitions object=quote outcome=stale transition=patch":            1,
		"hashgate_repo_events event=cas_conflict object=quote":                             1,
		"hashgate_repo_transitions object=case outcome=ok transition=escalate":             3,
		"hashgate_repo_transitions object=case outcome=max_escalation transition=escalate": 1,
		"hashgate_repo_transitions object=quote outcome=ok transition=delete":              1,
		"hashgate_repo_transitions object=quote outcome=absent transition=delete":          2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	for k, v := range got { // every reply was one its caller expects
		if strings.HasPrefix(k, "hashgate_repo_script_errors") && v != 0 {
			t.Errorf("%s = %d, want 0", k, v)
		}
	}
	if t.Failed() {
		t.Logf("collected: %v", got)
	}
}
