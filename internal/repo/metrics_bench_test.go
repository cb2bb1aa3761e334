package repo

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
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
		x.Read(ctx, sessObject, o)
	}
	b.ReportAllocs()
	for b.Loop() {
		x.Read(ctx, sessObject, Found)
	}
}
