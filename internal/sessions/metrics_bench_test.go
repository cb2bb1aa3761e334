package sessions

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkAuthCount is what counting one authentication (hashgate_session_authentications)
// costs the hot path, on the SDK's meter.
//
//	go test -run '^$' -bench BenchmarkAuthCount -benchmem ./internal/sessions/
func BenchmarkAuthCount(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	x, err := newInstruments(mp.Meter("bench"), func() (int64, int64) { return 0, 0 })
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		x.auth(ctx, authOK)
	}
}
