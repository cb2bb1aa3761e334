package telemetry

import (
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Meter returns a meter for instrumentation scope name (conventionally the
// importing package's path). Instruments it creates appear in
// [Telemetry.MetricsHandler]. A nil t yields a no-op meter.
func (t *Telemetry) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return t.Meters().Meter(name, opts...)
}

// Tracer returns a tracer for instrumentation scope name. A nil t yields a
// no-op tracer.
func (t *Telemetry) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return t.tracerProvider().Tracer(name, opts...)
}

// Meters is the meter provider behind [Telemetry.Meter], for libraries that take a provider
// (the traced Redis client); a no-op one for a nil t.
func (t *Telemetry) Meters() metric.MeterProvider {
	if t == nil || t.MeterProvider == nil {
		return metricnoop.NewMeterProvider()
	}
	return t.MeterProvider
}

// Recording reports whether spans are collected (an exporter or a span processor is set).
func (t *Telemetry) Recording() bool { return t != nil && t.recording }

// RedisCommandLabels reports Config.RedisCommandLabels (false for a nil t).
func (t *Telemetry) RedisCommandLabels() bool { return t != nil && t.commandLabels }

// Spans is the tracer provider for per-request and per-command spans: the no-op one when
// nothing records them, so the hot paths pay nothing for tracing that goes nowhere.
func (t *Telemetry) Spans() trace.TracerProvider {
	if !t.Recording() {
		return tracenoop.NewTracerProvider()
	}
	return t.TracerProvider
}

func (t *Telemetry) tracerProvider() trace.TracerProvider {
	if t == nil || t.TracerProvider == nil {
		return tracenoop.NewTracerProvider()
	}
	return t.TracerProvider
}

func (t *Telemetry) propagator() propagation.TextMapPropagator {
	if t == nil || t.Propagator == nil {
		return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return t.Propagator
}
