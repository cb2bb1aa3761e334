package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkEchoMetrics is what the HTTP metrics (EchoMetricsMiddleware: the request counter
// and the duration histogram) cost one request, over a handler that does nothing, with the
// telemetry cmd/gateway sets up (no span exporter). The context and recorder are made once.
//
//	go test -run '^$' -bench BenchmarkEchoMetrics -benchmem ./internal/telemetry/
func BenchmarkEchoMetrics(b *testing.B) {
	e, h := benchMetricsHandler(b)
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/authorize", nil), httptest.NewRecorder())
	c.SetPath("/v1/authorize")
	b.ReportAllocs()
	for b.Loop() {
		c.Response().Committed = false
		if err := h(c); err != nil {
			b.Fatal(err)
		}
	}
}

// Past the SDK's cardinality limit less one (2,000 by default), requests are counted in one
// series marked otel.metric.overflow, and the sets kept stay bounded.
func TestHTTPSeriesOverflow(t *testing.T) {
	a := newHTTPSeries()
	if a.limit != 1999 {
		t.Fatalf("limit %d, want the SDK's default 2,000 less the overflow series", a.limit)
	}
	first := a.get("GET", 200, "/r/0")
	for i := 1; i < a.limit; i++ {
		a.get("GET", 200, "/r/"+strconv.Itoa(i))
	}
	over := a.get("GET", 200, "/r/past")
	if a.get("GET", 200, "/r/0") != first || over == first || a.get("POST", 201, "/r/other") != over || len(a.m) != a.limit {
		t.Fatalf("series: %d kept, overflow shared: %v", len(a.m), a.get("POST", 201, "/r/other") == over)
	}
	n := 0
	a.each(func(*series) { n++ })
	if n != a.limit+1 {
		t.Fatalf("each visited %d series, want %d", n, a.limit+1)
	}
}

// BenchmarkEchoMetricsParallel is BenchmarkEchoMetrics from GOMAXPROCS goroutines at once
// (one series, as the authorize route's requests share one): what the shared counters cost
// when the cores update them together.
//
//	go test -run '^$' -bench BenchmarkEchoMetricsParallel -benchmem ./internal/telemetry/
func BenchmarkEchoMetricsParallel(b *testing.B) {
	e, h := benchMetricsHandler(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/v1/authorize", nil), httptest.NewRecorder())
		c.SetPath("/v1/authorize")
		for pb.Next() {
			c.Response().Committed = false
			if err := h(c); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchMetricsHandler is EchoMetricsMiddleware, with the telemetry cmd/gateway sets up, over a
// handler that only answers 200.
func benchMetricsHandler(b *testing.B) (*echo.Echo, echo.HandlerFunc) {
	tel, err := Setup(context.Background(), Config{ServiceName: "hashgate-bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return echo.New(), EchoMetricsMiddleware(tel)(func(c echo.Context) error { c.Response().WriteHeader(http.StatusOK); return nil })
}
