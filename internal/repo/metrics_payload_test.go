package repo

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestPayloadPerObjectType: each object type's payloads land in its own series, labelled
// object=<type> alone, from every goroutine (its options are kept per type).
func TestPayloadPerObjectType(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	x := NewMetrics(mp.Meter("test"))
	ctx := context.Background()
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				x.Payload(ctx, "session", 10)
				x.Payload(ctx, "quote", 30)
			}
		}()
	}
	for range 4 {
		<-done
	}
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[attribute.Distinct][2]int64{}
	sess, quote := attribute.NewSet(attribute.String("object", "session")), attribute.NewSet(attribute.String("object", "quote"))
	want := map[attribute.Distinct][2]int64{sess.Equivalent(): {400, 4000}, quote.Equivalent(): {400, 12000}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "hashgate_repo_payload_bytes" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
				got[dp.Attributes.Equivalent()] = [2]int64{int64(dp.Count), dp.Sum}
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("payload series %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("payload %v = %v, want %v (count, sum)", k, got[k], w)
		}
	}
}
