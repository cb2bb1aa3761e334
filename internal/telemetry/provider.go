package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Config names the service in the telemetry resource. Everything else, the
// trace exporter included, comes from the standard OTEL_* environment variables: OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (which override these fields),
// OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER[_ARG].
type Config struct {
	ServiceName    string
	ServiceVersion string
	// RedisCommandLabels labels Redis client metrics with the command name. It costs an
	// attribute set per call (cache hits included), so it is off unless asked for.
	RedisCommandLabels bool
}

// Telemetry holds the configured providers. Build it with [Setup] and release
// it with [Telemetry.Shutdown].
type Telemetry struct {
	TracerProvider *sdktrace.TracerProvider
	MeterProvider  *sdkmetric.MeterProvider
	// Registry is private to this Telemetry (not prometheus.DefaultRegisterer);
	// it holds the Go and process collectors and the OTel metrics.
	Registry   *prometheus.Registry
	Propagator propagation.TextMapPropagator

	metricsHandler http.Handler
	// recording is false when nothing consumes spans (no exporter, no processor): the hot
	// paths then skip span bookkeeping altogether.
	recording     bool
	commandLabels bool
	// http holds the HTTP server metrics' series (EchoMetricsMiddleware), made on first use.
	http         *httpSeries
	httpOnce     sync.Once
	shutdownOnce sync.Once
	shutdownErr  error
}

// Setup builds the tracer and meter providers and installs the W3C
// trace-context + baggage propagator globally. The providers themselves are
// not installed globally; hand them out with [Telemetry.Tracer] and
// [Telemetry.Meter].
//
// Traces go to the exporter selected by OTEL_TRACES_EXPORTER; when neither it
// nor an OTLP endpoint is set, spans are not exported at all. The sampler is
// the SDK default, which honours OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG
// (parentbased_always_on otherwise). Metrics are only exposed for Prometheus
// scraping through [Telemetry.MetricsHandler].
func Setup(ctx context.Context, cfg Config, opts ...Option) (*Telemetry, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}

	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	if err := errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
	); err != nil {
		return nil, fmt.Errorf("telemetry: prometheus collectors: %w", err)
	}
	// The HTTP duration histogram is aggregated outside the SDK (httphist.go) and reaches
	// the reader as an external producer. Every reader of the meter provider needs it: a
	// reader added here (an OTLP one) takes sdkmetric.WithProducer(httpProducer).
	http := newHTTPSeries()
	httpProducer := &durationProducer{series: http}
	promExp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(httpProducer))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}

	// Last fallible step, so a failure leaks no exporter.
	exp, err := newSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: span exporter: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if !isNoopSpanExporter(exp) {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
	}
	for _, sp := range o.spanProcessors {
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(sp))
	}
	recording := !isNoopSpanExporter(exp) || len(o.spanProcessors) > 0
	if !recording {
		// Nothing consumes spans: record none. Spans still carry valid trace and span ids
		// (for logs and propagation), but cost no attribute or event bookkeeping.
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.NeverSample()))
	}

	t := &Telemetry{
		TracerProvider: sdktrace.NewTracerProvider(tpOpts...),
		MeterProvider: sdkmetric.NewMeterProvider(
			sdkmetric.WithResource(res),
			sdkmetric.WithReader(promExp),
		),
		Registry:      reg,
		http:          http,
		recording:     recording,
		commandLabels: cfg.RedisCommandLabels,
		Propagator: propagation.NewCompositeTextMapPropagator(
			propagation.TraceContext{}, propagation.Baggage{},
		),
		metricsHandler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError,
		}),
	}
	otel.SetTextMapPropagator(t.Propagator)
	return t, nil
}

func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	name := cfg.ServiceName
	if name == "" {
		name = "unknown_service:" + filepath.Base(os.Args[0])
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(cfg.ServiceVersion))
	}
	// Later options win: the environment overrides Config.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// MetricsHandler serves the Prometheus text exposition of t.Registry: the
// OTel metrics of t.MeterProvider plus Go runtime and process metrics. With a
// nil t it serves an empty registry.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t == nil {
		return promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
	}
	return t.metricsHandler
}

// Shutdown flushes pending spans and shuts both providers down. Later calls
// return the first call's result; a nil t is a no-op.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownOnce.Do(func() {
		t.shutdownErr = errors.Join(
			t.TracerProvider.Shutdown(ctx),
			t.MeterProvider.Shutdown(ctx),
		)
	})
	return t.shutdownErr
}
