package telemetry

import (
	"net/http"
	"sync"
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
// A handler error is rendered with c.Error first (as otelecho and Echo's
// logger do) so the recorded status is the one sent; the error is still
// returned.
func EchoMetricsMiddleware(t *Telemetry) echo.MiddlewareFunc {
	meter := t.Meter(scopeName)
	requests, err := meter.Int64Counter("http.server.requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Number of HTTP requests served."))
	otelHandle(err)
	duration, err := meter.Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(httpDurationBuckets...))
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

			set := attrSets.get(normalizeMethod(c.Request().Method), c.Response().Status, c.Path())
			ctx := c.Request().Context()
			requests.Add(ctx, 1, set.add...)
			duration.Record(ctx, elapsed, set.record...)
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

// attrSets caches one attribute set per (method, status, route): the label space is bounded
// (normalised methods, route templates, statuses), and building a set per request costs
// allocations on the hot path.
var attrSets = &attrSetCache{m: map[attrKey]attrOpts{}}

// attrOpts holds one attribute set as the option slices Add and Record take, built once (a
// variadic call would otherwise allocate its slice on every request).
type attrOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

type attrKey struct {
	method string
	status int
	route  string
}

type attrSetCache struct {
	mu sync.RWMutex
	m  map[attrKey]attrOpts
}

func (a *attrSetCache) get(method string, status int, route string) attrOpts {
	k := attrKey{method, status, route}
	a.mu.RLock()
	opt, ok := a.m[k]
	a.mu.RUnlock()
	if ok {
		return opt
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String("http.request.method", method), attribute.Int("http.response.status_code", status))
	if route != "" {
		attrs = append(attrs, attribute.String("http.route", route))
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	opt = attrOpts{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	a.mu.Lock()
	if len(a.m) < 10000 { // routes are templates; the bound only guards against surprises
		a.m[k] = opt
	}
	a.mu.Unlock()
	return opt
}
