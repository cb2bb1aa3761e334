package telemetry

import (
	"context"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
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
// Both are kept per attribute set in t's httpSeries, shared by every middleware of t (as
// the SDK shares an instrument's aggregation): the counter in an atomic observed at
// collection (an observable counter: the same monotonic sum), the histogram in atomics read
// by the reader's producer (httphist.go: the same data the SDK's histogram would give). A
// request pays no SDK call.
//
// A handler error is rendered with c.Error first (as otelecho and Echo's
// logger do) so the recorded status is the one sent; the error is still
// returned.
func EchoMetricsMiddleware(t *Telemetry) echo.MiddlewareFunc {
	sets := t.httpMetrics()
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
			s.d.record(c.Request().Context(), elapsed, sets.filter)
			return err
		}
	}
}

const (
	durationName        = "http.server.request.duration"
	durationDescription = "Duration of HTTP server requests."
)

// httpMetrics is t's httpSeries, its instruments made on first use (a nil t gets one of
// its own that no reader collects).
func (t *Telemetry) httpMetrics() *httpSeries {
	if t == nil {
		a := newHTTPSeries()
		a.start = time.Now()
		return a
	}
	t.httpOnce.Do(func() {
		meter := t.Meter(scopeName)
		requests, err := meter.Int64ObservableCounter("http.server.requests",
			metric.WithUnit("{request}"),
			metric.WithDescription("Number of HTTP requests served."))
		otelHandle(err)
		sets := t.http
		_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			sets.each(func(s *series) { o.ObserveInt64(requests, s.n.Load(), s.observe) })
			return nil
		}, requests)
		otelHandle(err)
		sets.mu.Lock()
		sets.start = time.Now() // the histogram instrument's creation, its cumulative start
		sets.mu.Unlock()
	})
	return t.http
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

// httpSeries holds one series per (method, status, route): its request count, its duration
// histogram and its attribute set, built once (as the option Observe takes; building a set per
// request costs allocations on the hot path). The label space is bounded (normalised methods,
// route templates, statuses); past the SDK's cardinality limit less one (or maxHTTPSeries,
// whichever is lower) the rest share one series marked otel.metric.overflow, as the SDK marks
// what exceeds its limit, so neither instrument ever reaches the SDK's own limit.
type httpSeries struct {
	// read is a copy of m that requests read without a lock (an RWMutex's read lock is an
	// atomic on one shared word per request); m changes under mu, and read is replaced then.
	read     atomic.Pointer[map[attrKey]*series]
	mu       sync.Mutex
	m        map[attrKey]*series
	overflow *series
	limit    int       // distinct series kept
	start    time.Time // set when the instruments are made
	bounds   []float64 // sorted
	filter   exemplar.Filter
	noRes    bool // exemplars off: no reservoir
}

// maxHTTPSeries bounds the series kept; routes are templates, so it only guards against
// surprises.
const maxHTTPSeries = 10000

type series struct {
	n       atomic.Int64
	d       durationHist
	attrs   attribute.Set
	observe metric.ObserveOption
}

type attrKey struct {
	method string
	status int
	route  string
}

func newHTTPSeries() *httpSeries {
	a := &httpSeries{m: map[attrKey]*series{}, limit: maxHTTPSeries, bounds: sortedBounds()}
	a.read.Store(&map[attrKey]*series{})
	if l := cardinalityLimitFromEnv(); l > 0 && l-1 < a.limit {
		a.limit = l - 1
	}
	a.filter, a.noRes = exemplarFilterFromEnv()
	return a
}

func (a *httpSeries) newSeries(attrs ...attribute.KeyValue) *series {
	s := &series{attrs: attribute.NewSet(attrs...)}
	s.observe = metric.WithAttributeSet(s.attrs)
	s.d.init(a.bounds, a.noRes)
	return s
}

func (a *httpSeries) get(method string, status int, route string) *series {
	k := attrKey{method, status, route}
	if s, ok := (*a.read.Load())[k]; ok {
		return s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.m[k]; ok {
		return s
	}
	if len(a.m) >= a.limit {
		if a.overflow == nil {
			a.overflow = a.newSeries(attribute.Bool("otel.metric.overflow", true))
		}
		return a.overflow
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, attribute.String("http.request.method", method), attribute.Int("http.response.status_code", status))
	if route != "" {
		attrs = append(attrs, attribute.String("http.route", route))
	}
	s := a.newSeries(attrs...)
	a.m[k] = s
	read := maps.Clone(a.m)
	a.read.Store(&read)
	return s
}

// each calls f with every series.
func (a *httpSeries) each(f func(*series)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.m {
		f(s)
	}
	if a.overflow != nil {
		f(a.overflow)
	}
}
