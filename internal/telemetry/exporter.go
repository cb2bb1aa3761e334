package telemetry

import (
	"context"
	"os"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newSpanExporter selects the span exporter from the environment through
// autoexport (OTEL_TRACES_EXPORTER=otlp|console|none, OTEL_EXPORTER_OTLP_*).
//
// autoexport alone defaults to an OTLP exporter that dials localhost:4318
// when OTEL_TRACES_EXPORTER is unset. Here, when it is unset, OTLP is only used
// if an OTLP endpoint is configured; otherwise a no-op exporter is returned,
// which [Setup] does not even register.
func newSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return autoexport.NewSpanExporter(ctx, autoexport.WithFallbackSpanExporter(
		func(ctx context.Context) (sdktrace.SpanExporter, error) {
			if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" &&
				os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
				return noopSpanExporter{}, nil
			}
			// OTEL_TRACES_EXPORTER is empty here, so without a fallback
			// autoexport builds its default OTLP exporter, honouring
			// OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL and the other OTLP variables.
			return autoexport.NewSpanExporter(ctx)
		}))
}

// isNoopSpanExporter reports whether exp discards everything, either ours or
// autoexport's (OTEL_TRACES_EXPORTER=none).
func isNoopSpanExporter(exp sdktrace.SpanExporter) bool {
	_, ok := exp.(noopSpanExporter)
	return ok || autoexport.IsNoneSpanExporter(exp)
}

type noopSpanExporter struct{}

func (noopSpanExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (noopSpanExporter) Shutdown(context.Context) error                             { return nil }
