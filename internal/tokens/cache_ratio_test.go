package tokens_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// hashgate_tokens_check_cache_hit_ratio reads hits/(hits+misses) of the check's client-side
// cache: on Redis 8 (client tracking on) one miss then twenty hits of a hot token read 20/21;
// on the embedded store (no client cache) every read is a miss and the ratio is 0. Before the
// first check there is nothing to divide and no point is reported.
func TestCheckCacheHitRatioGauge(t *testing.T) {
	t.Parallel()
	const hot = 20
	for _, tc := range []struct {
		b                  testredis.Backend
		wantHits, wantMiss int64
	}{
		{testredis.Backends()[0], 0, hot + 1}, // embedded
		{testredis.Backends()[1], hot, 1},     // redis8
	} {
		t.Run(tc.b.Name, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, tc.b)
			if tc.wantHits > 0 && !s.Caps.ClientCache {
				t.Fatalf("%s opened without client-side caching", tc.b.Name)
			}
			e := newEnv(t, testredis.Prefix(t))
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			svc := e.service(t, s, nil, tokens.Options{CacheTTL: time.Minute, Meter: mp.Meter("tokens")})
			ctx := context.Background()
			if _, ok := cacheRatio(t, reader); ok {
				t.Fatal("a hit ratio is reported before any check")
			}
			out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
			if err != nil {
				t.Fatal(err)
			}
			claims, err := e.auth.Verify(out.Token)
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Check(ctx, claims); err != nil {
				t.Fatal(err)
			}
			if r, ok := cacheRatio(t, reader); !ok || r != 0 {
				t.Fatalf("after the first (missed) check the ratio is %v (reported %v), want 0", r, ok)
			}
			for range hot {
				if err := svc.Check(ctx, claims); err != nil {
					t.Fatal(err)
				}
			}
			hits, misses := svc.CacheStats()
			if hits != tc.wantHits || misses != tc.wantMiss {
				t.Fatalf("cache stats hits=%d misses=%d, want %d/%d", hits, misses, tc.wantHits, tc.wantMiss)
			}
			want := float64(tc.wantHits) / float64(tc.wantHits+tc.wantMiss)
			r, ok := cacheRatio(t, reader)
			if !ok || r != want {
				t.Fatalf("hit ratio = %v (reported %v), want %v", r, ok, want)
			}
			if tc.wantHits > 0 && r <= 0.9 {
				t.Fatalf("hot token hit ratio %v, want > 0.9", r)
			}
		})
	}
}

// cacheRatio collects reader and returns the hit-ratio gauge's single point.
func cacheRatio(t *testing.T, reader *sdkmetric.ManualReader) (float64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "hashgate_tokens_check_cache_hit_ratio" {
				continue
			}
			g, ok := m.Data.(metricdata.Gauge[float64])
			if !ok {
				t.Fatalf("%s is a %T, want a float64 gauge", m.Name, m.Data)
			}
			switch len(g.DataPoints) {
			case 0:
				return 0, false
			case 1:
				return g.DataPoints[0].Value, true
			default:
				t.Fatalf("%s has %d points, want 1", m.Name, len(g.DataPoints))
			}
		}
	}
	return 0, false
}
