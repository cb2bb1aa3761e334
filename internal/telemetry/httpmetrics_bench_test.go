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
	tel, err := Setup(context.Background(), Config{ServiceName: "hashgate-bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	e := echo.New()
	h := EchoMetricsMiddleware(tel)(func(c echo.Context) error { c.Response().WriteHeader(http.StatusOK); return nil })
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

// Past maxHTTPSeries attribute sets, requests are counted in one series marked
// otel.metric.overflow, and the sets kept stay bounded.
func TestHTTPSeriesOverflow(t *testing.T) {
	a := &httpSeries{m: map[attrKey]*series{}}
	first := a.get("GET", 200, "/r/0")
	for i := 1; i < maxHTTPSeries; i++ {
		a.get("GET", 200, "/r/"+strconv.Itoa(i))
	}
	over := a.get("GET", 200, "/r/past")
	if a.get("GET", 200, "/r/0") != first || over == first || a.get("POST", 201, "/r/other") != over || len(a.m) != maxHTTPSeries {
		t.Fatalf("series: %d kept, overflow shared: %v", len(a.m), a.get("POST", 201, "/r/other") == over)
	}
	n := 0
	a.each(func(*series) { n++ })
	if n != maxHTTPSeries+1 {
		t.Fatalf("each visited %d series, want %d", n, maxHTTPSeries+1)
	}
}
