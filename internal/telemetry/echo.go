package telemetry

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// unobservedPaths get neither spans nor HTTP metrics.
var unobservedPaths = map[string]bool{"/healthz": true, "/metrics": true}

func skipObservability(c echo.Context) bool {
	return unobservedPaths[c.Request().URL.Path] || unobservedPaths[c.Path()]
}

// EchoMiddleware traces requests (otelecho: server span named
// "METHOD /route/:template", remote context extracted with t's propagator)
// and records the HTTP server metrics of [EchoMetricsMiddleware] within that
// span. /healthz and /metrics are skipped. service is reported as the
// server's name on spans. Register it with e.Use (not e.Pre) so the route
// template is known.
func EchoMiddleware(t *Telemetry, service string) echo.MiddlewareFunc {
	tracing := otelecho.Middleware(service,
		otelecho.WithTracerProvider(t.Spans()),
		otelecho.WithPropagators(t.propagator()),
		otelecho.WithSkipper(skipObservability),
	)
	metrics := EchoMetricsMiddleware(t)
	if !t.Recording() {
		// Nothing records spans: skip otelecho's per-request span bookkeeping, but keep an
		// incoming W3C trace context on the request so log lines still carry its ids.
		prop := t.propagator()
		return func(next echo.HandlerFunc) echo.HandlerFunc {
			m := metrics(next)
			return func(c echo.Context) error {
				r := c.Request()
				// (the canonical name: Header.Get would canonicalise "traceparent" into a new
				// string on every request)
				if v := r.Header["Traceparent"]; len(v) > 0 && v[0] != "" {
					ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
					c.SetRequest(r.WithContext(ctx))
				}
				return m(c)
			}
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		inner := metrics(next)
		return tracing(func(c echo.Context) error {
			// otelecho records the request's whole target (path and query): ids and free
			// text a caller may consider private (/v1/users/{userId}/sessions, ?reason=).
			// The server span names the route template instead, as the access log does.
			if sp := trace.SpanFromContext(c.Request().Context()); sp.IsRecording() {
				sp.SetAttributes(attribute.String("http.target", c.Path()))
			}
			return inner(c)
		})
	}
}
