// Package telemetry wires OpenTelemetry tracing and metrics, Prometheus
// exposition and structured logging for hashgate.
//
// [Setup] builds a [Telemetry] value holding a tracer provider (exporter chosen
// from the standard OTEL_* environment variables, none by default), a meter
// provider exported through a private Prometheus registry (see
// [Telemetry.MetricsHandler]) and installs the W3C trace-context and baggage
// propagators globally. The other files adapt it to the libraries hashgate
// uses: Echo ([EchoMiddleware]) and log/slog ([NewLogger]); the sub-package
// redistrace adapts it to rueidis, so this package does not depend on the
// Redis client.
//
// Every method on *Telemetry and every helper taking one accepts nil and then
// falls back to no-op providers, so tests can pass nil.
package telemetry
