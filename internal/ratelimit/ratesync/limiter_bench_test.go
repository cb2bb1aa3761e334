package ratesync

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkSyncTake is the request path of a bearer request: its token's and its tenant's
// counters, decided from memory (no Redis call), with the headers' values formatted. The
// decisions metric is the OpenTelemetry SDK's, as in the gateway.
func BenchmarkSyncTake(b *testing.B) {
	s := testredis.Open(b, testredis.Backends()[0])
	h, _, _ := keyhash.Generate()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())).Meter("bench")
	l, err := New(s, testredis.Prefix(b), h, Options{Meter: meter})
	if err != nil {
		b.Fatal(err)
	}
	tok := &ratelimit.Policy{Name: "token", Limit: 1 << 30, Window: time.Minute}
	ten := &ratelimit.Policy{Name: "tenant", Limit: 1 << 30, Window: time.Minute}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ds, ok := l.Take(ctx, ratelimit.Request{Policy: tok, ID: "tok-1"}, ratelimit.Request{Policy: ten, ID: "acme"})
			if !ok {
				b.Fatal("refused")
			}
			_, _ = ratelimit.HeaderValues(ds)
		}
	})
}
