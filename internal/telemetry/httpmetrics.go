package telemetry

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

const scopeName = "github.com/hashgate/hashgate/internal/telemetry"

// Seconds; the OTel semantic-conventions advice for http.server.request.duration.
var httpDurationBuckets = []float64{
	0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
}

// EchoMetricsMiddleware records http.server.requests (counter) and
// http.server.request.duration (histogram, seconds) with the attributes
// http.request.method, http.route (the route template c.Path(), absent for
// unmatched requests; never the raw URL) and http.response.status_code. In
// Prometheus they read http_server_requests_total and
// http_server_request_duration_seconds. /healthz and /metrics are skipped.
//
// The counter is counted in an atomic per attribute set and observed at collection (an
// observable counter: the same monotonic sum), so a request pays one synchronous measurement,
// the histogram's, instead of two.
//
// A handler error is rendered with c.Error first (as otelecho and Echo's
// logger do) so the recorded status is the one sent; the error is still
// returned.
func EchoMetricsMiddleware(t *Telemetry) echo.MiddlewareFunc {
	meter := t.Meter(scopeName)
	requests, err := meter.Int64ObservableCounter("http.server.requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of HTTP requests served."))
	otelHandle(err)
	duration, err := meter.Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(httpDurationBuckets...))
	otelHandle(err)
	sets := &httpSeries{m: map[attrKey]*series{}}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		sets.each(func(s *series) { o.ObserveInt64(requests, s.n.Load(), s.observe) })
		return nil
	}, requests)
	otelHandle(err)

	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skipObservability(c) {
				return next(c)
			}
			start := time.Now()
			err := next(c)
			if err != nil && !c.Response().Committed {
				c.Error(err)
			}
			elapsed := time.Since(start).Seconds()

			s := sets.get(normalizeMethod(c.Request().Method), c.Response().Status, c.Path())
			s.n.Add(1)
			duration.Record(c.Request().Context(), elapsed, s.record...)
			return err
		}
	}
}

// normalizeMethod bounds the method label's cardinality (semconv "_OTHER").
func normalizeMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	default:
		return "_OTHER"
	}
}

// otelHandle reports instrument creation errors (only possible with invalid
// names or units) to the OTel error handler; the SDK still returns usable
// instruments alongside them.
func otelHandle(err error) {
	if err != nil {
		otel.Handle(err)
	}
}

// httpSeries holds one series per (method, status, route): its request count and its
// attribute set, built once as the options Record and Observe take (building a set, or a
// variadic call's slice, per request costs allocations on the hot path). The label space is
// bounded (normalised methods, route templates, statuses); past maxHTTPSeries the rest share
// one series marked otel.metric.overflow, as the SDK's own cardinality limit (2,000 series by
// default, reached first) marks what exceeds it.
type httpSeries struct {
	mu       sync.RWMutex
	m        map[attrKey]*series
	overflow *series
}

// maxHTTPSeries bounds the series kept; routes are templates, so it only guards against
// surprises.
const maxHTTPSeries = 10000

type series struct {
	n       atomic.Int64
	record  []metric.RecordOption
	observe metric.ObserveOption
}

type attrKey struct {
	method string
	status int
	route  string
}

func newSeries(attrs ...attribute.KeyValue) *series {
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return &series{record: []metric.RecordOption{set}, observe: set}
}

func (a *httpSeries) get(method string, status int, route string) *series {
	k := attrKey{method, status, route}
	a.mu.RLock()
	s, ok := a.m[k]
	a.mu.RUnlock()
	if ok {
		return s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.m[k]; ok {
		return s
	}
	if len(a.m) >= maxHTTPSeries {
		if a.overflow == nil {
			a.overflow = newSeries(attribute.Bool("otel.metric.overflow", true))
		}
		return a.overflow
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String("http.request.method", method), attribute.Int("http.response.status_code", status))
	if route != "" {
		attrs = append(attrs, attribute.String("http.route", route))
	}
	s = newSeries(attrs...)
	a.m[k] = s
	return s
}

// each calls f with every series.
func (a *httpSeries) each(f func(*series)) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, s := range a.m {
		f(s)
	}
	if a.overflow != nil {
		f(a.overflow)
	}
}
