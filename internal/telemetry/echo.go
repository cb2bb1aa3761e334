package telemetry

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
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
		otelecho.WithTracerProvider(t.tracerProvider()),
		otelecho.WithPropagators(t.propagator()),
		otelecho.WithSkipper(skipObservability),
	)
	metrics := EchoMetricsMiddleware(t)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return tracing(metrics(next))
	}
}
