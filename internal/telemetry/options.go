package telemetry

import sdktrace "go.opentelemetry.io/otel/sdk/trace"

// Option customises [Setup]; the defaults come from the OTEL_* environment.
type Option func(*options)

type options struct {
	spanProcessors []sdktrace.SpanProcessor
}

// WithSpanProcessor registers sp in addition to the configured exporter. In
// tests, sdktrace.NewSimpleSpanProcessor(tracetest.NewInMemoryExporter())
// makes finished spans visible synchronously.
func WithSpanProcessor(sp sdktrace.SpanProcessor) Option {
	return func(o *options) { o.spanProcessors = append(o.spanProcessors, sp) }
}
