package telemetry

import (
	"context"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"
)

// The duration histogram aggregated outside the SDK gives the data the SDK's own histogram
// gives for the same measurements: through a reader (as OTLP would carry it) and through
// the Prometheus exporter (/metrics), with the cardinality limit's overflow series and with
// exemplars. Timestamps aside: they are taken at different instants.
func TestDurationHistogramMatchesSDK(t *testing.T) {
	t.Setenv("OTEL_GO_X_CARDINALITY_LIMIT", "4") // 3 series and the overflow one
	ctx := context.Background()

	// The SDK's histogram, as EchoMetricsMiddleware made it before.
	sdkReader := sdkmetric.NewManualReader()
	sdkReg := prometheus.NewRegistry()
	sdkProm, err := otelprom.New(otelprom.WithRegisterer(sdkReg))
	if err != nil {
		t.Fatal(err)
	}
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkReader), sdkmetric.WithReader(sdkProm))
	t.Cleanup(func() { _ = sdkMP.Shutdown(ctx) })
	hist, err := sdkMP.Meter(scopeName).Float64Histogram(durationName,
		metric.WithUnit("s"), metric.WithDescription(durationDescription),
		metric.WithExplicitBucketBoundaries(httpDurationBuckets...))
	if err != nil {
		t.Fatal(err)
	}

	// Ours, through a producer on each reader (the SDK aggregates apart per reader: so do
	// these, with one httpSeries each, recorded alike).
	a, b := newHTTPSeries(), newHTTPSeries()
	a.start, b.start = time.Now(), time.Now()
	ourReader := sdkmetric.NewManualReader(sdkmetric.WithProducer(&durationProducer{series: a}))
	ourReg := prometheus.NewRegistry()
	ourProm, err := otelprom.New(otelprom.WithRegisterer(ourReg), otelprom.WithProducer(&durationProducer{series: b}))
	if err != nil {
		t.Fatal(err)
	}
	ourMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(ourReader), sdkmetric.WithReader(ourProm))
	t.Cleanup(func() { _ = ourMP.Shutdown(ctx) })

	// A sampled span in the context makes an exemplar (the default trace_based filter); one
	// sampled measurement per bucket and series keeps the reservoirs' choice deterministic.
	sampled := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	}))
	values := []float64{0, 0.001, 0.005, 0.0051, 0.01, 0.02, 0.3, 0.75, 1, 9.99, 10, 11, 1e6, -1}
	routes := []string{"/v1/authorize", "", "/v1/sessions", "/v1/users/:id", "/v1/other"}
	record := func(ctx context.Context, method string, status int, route string, v float64) {
		s := a.get(method, status, route)
		s.d.record(ctx, v, a.filter)
		hist.Record(ctx, v, metric.WithAttributeSet(s.attrs))
		b.get(method, status, route).d.record(ctx, v, b.filter)
	}
	for r, route := range routes {
		for i, v := range values {
			rctx := ctx
			if r != 4 && (i == 0 || i == 4 || i == 6 || i == 9) { // distinct buckets
				rctx = sampled
			}
			v += float64(r) / 1000
			record(rctx, "GET", 200+r, route, v)
		}
	}

	var sdkRM, ourRM metricdata.ResourceMetrics
	if err := sdkReader.Collect(ctx, &sdkRM); err != nil {
		t.Fatal(err)
	}
	if err := ourReader.Collect(ctx, &ourRM); err != nil {
		t.Fatal(err)
	}
	want, got := durationOf(t, sdkRM), durationOf(t, ourRM)
	if n := len(want.Data.(metricdata.Histogram[float64]).DataPoints); n != 4 {
		t.Fatalf("the SDK kept %d series, want 3 and the overflow one", n)
	}
	metricdatatest.AssertEqual(t, want, got, metricdatatest.IgnoreTimestamp())
	for _, dp := range got.Data.(metricdata.Histogram[float64]).DataPoints {
		if len(dp.Exemplars) == 0 {
			t.Errorf("series %v: no exemplar", dp.Attributes.ToSlice())
		}
	}
	// A second collection: cumulative, still equal.
	record(ctx, "GET", 200, "/v1/authorize", 0.2)
	record(ctx, "POST", 500, "/late", 0.2)
	if err := sdkReader.Collect(ctx, &sdkRM); err != nil {
		t.Fatal(err)
	}
	if err := ourReader.Collect(ctx, &ourRM); err != nil {
		t.Fatal(err)
	}
	metricdatatest.AssertEqual(t, durationOf(t, sdkRM), durationOf(t, ourRM), metricdatatest.IgnoreTimestamp())

	// /metrics: the same family, sample for sample (created timestamps aside).
	wantFam, gotFam := promFamily(t, sdkReg), promFamily(t, ourReg)
	if !proto.Equal(wantFam, gotFam) {
		t.Fatalf("/metrics differs:\nSDK:  %v\nours: %v", wantFam, gotFam)
	}
}

func durationOf(t *testing.T, rm metricdata.ResourceMetrics) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == durationName {
				if sm.Scope.Name != scopeName || sm.Scope.Version != "" || sm.Scope.SchemaURL != "" {
					t.Fatalf("scope %+v", sm.Scope)
				}
				return m
			}
		}
	}
	t.Fatalf("no %s in %+v", durationName, rm)
	return metricdata.Metrics{}
}

func promFamily(t *testing.T, reg *prometheus.Registry) *dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "http_server_request_duration_seconds" {
			for _, m := range f.Metric {
				m.Histogram.CreatedTimestamp = nil
				for _, b := range m.Histogram.Bucket {
					b.Exemplar = nil // its timestamp; the exemplars are compared above
				}
			}
			return f
		}
	}
	t.Fatal("no http_server_request_duration_seconds")
	return nil
}

// Concurrent observations and collections: every collection is a consistent snapshot (its
// count is its buckets' total, its sum theirs) and the last one holds every observation.
func TestDurationHistConcurrent(t *testing.T) {
	a := newHTTPSeries()
	s := a.get("GET", 200, "/v1/authorize")
	const goroutines, each = 4, 5000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	collected := make(chan error, 1)
	go func() {
		var last metricdata.HistogramDataPoint[float64]
		for {
			select {
			case <-stop:
				collected <- nil
				return
			default:
			}
			var dp metricdata.HistogramDataPoint[float64]
			s.d.snapshot(&dp)
			if err := consistent(dp, last); err != "" {
				collected <- errorString(err)
				return
			}
			last = dp
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s.d.record(context.Background(), float64(g*each+i%7)/1000, a.filter)
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	var dp metricdata.HistogramDataPoint[float64]
	s.d.snapshot(&dp)
	if dp.Count != goroutines*each {
		t.Fatalf("count %d, want %d", dp.Count, goroutines*each)
	}
	var want float64
	for g := range goroutines {
		for i := range each {
			want += float64(g*each+i%7) / 1000
		}
	}
	if math.Abs(dp.Sum-want) > 1e-6*want {
		t.Fatalf("sum %v, want %v", dp.Sum, want)
	}
	if lo, _ := dp.Min.Value(); lo != 0 {
		t.Fatalf("min %v, want 0", lo)
	}
	if hi, _ := dp.Max.Value(); hi != float64((goroutines-1)*each+6)/1000 {
		t.Fatalf("max %v", hi)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// consistent says what is wrong with a snapshot dp taken after last ("" if nothing).
func consistent(dp, last metricdata.HistogramDataPoint[float64]) string {
	var total uint64
	for i, n := range dp.BucketCounts {
		total += n
		if i < len(last.BucketCounts) && n < last.BucketCounts[i] {
			return "bucket " + strconv.Itoa(i) + " went down"
		}
	}
	if total != dp.Count {
		return "count " + strconv.FormatUint(dp.Count, 10) + " but buckets hold " + strconv.FormatUint(total, 10)
	}
	if dp.Count < last.Count || dp.Sum < last.Sum {
		return "count or sum went down"
	}
	return ""
}
