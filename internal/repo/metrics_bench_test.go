package repo

import (
	"context"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// BenchmarkMetricsRead is what counting one read (hashgate_repo_reads) costs: every
// authorization counts one.
//
//	go test -run '^$' -bench BenchmarkMetricsRead -benchmem ./internal/repo/
func BenchmarkMetricsRead(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	x := NewMetrics(mp.Meter("bench"))
	ctx := context.Background()
	for _, o := range []Outcome{Found, Missing, Corrupt} { // a few series, as a running gateway has
		x.Read(ctx, "quote", o)
		x.Read(ctx, "session", o)
	}
	b.ReportAllocs()
	for b.Loop() {
		x.Read(ctx, "session", Found)
	}
}

// Reads counted from many goroutines, new series among them, while collections run: every
// read is in the collected sums, each series once.
func TestMetricsReadConcurrent(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	x := NewMetrics(mp.Meter("test"))
	ctx := context.Background()
	objs := []string{"quote", "session", "token", "user"}
	outcomes := []Outcome{Found, Missing, Corrupt}
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				var rm metricdata.ResourceMetrics
				_ = reader.Collect(ctx, &rm)
			}
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				x.Read(ctx, objs[(i+g)%len(objs)], outcomes[i%len(outcomes)])
			}
		}()
	}
	wg.Wait()
	close(done)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	series := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "hashgate_repo_reads" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					total += dp.Value
					series++
				}
			}
		}
	}
	if total != 8*3000 || series != len(objs)*len(outcomes) {
		t.Fatalf("%d reads in %d series, want %d in %d", total, series, 8*3000, len(objs)*len(outcomes))
	}
}
