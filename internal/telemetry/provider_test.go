package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

var exporterEnv = []string{
	"OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
}

// Not parallel: t.Setenv.
func TestNewSpanExporter(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		wantNoop bool
		wantType string
		wantErr  bool
	}{
		{name: "empty env exports nothing", wantNoop: true},
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, wantNoop: true},
		{name: "protocol alone exports nothing", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantNoop: true},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, wantType: "*stdouttrace.Exporter"},
		{name: "otlp endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, wantType: "*otlptrace.Exporter"},
		{name: "otlp traces endpoint grpc", env: map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		}, wantType: "*otlptrace.Exporter"},
		{name: "explicit otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, wantType: "*otlptrace.Exporter"},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "bogus"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range exporterEnv {
				t.Setenv(k, tt.env[k])
			}
			exp, err := newSpanExporter(context.Background())
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want error, got exporter %T", exp)
				}
				return
			}
			if err != nil {
				t.Fatalf("newSpanExporter: %v", err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = exp.Shutdown(ctx)
			})
			if got := isNoopSpanExporter(exp); got != tt.wantNoop {
				t.Fatalf("isNoopSpanExporter(%T) = %v, want %v", exp, got, tt.wantNoop)
			}
			if tt.wantType != "" {
				if got := fmt.Sprintf("%T", exp); got != tt.wantType {
					t.Fatalf("exporter type = %s, want %s", got, tt.wantType)
				}
			}
		})
	}
}

// Not parallel: t.Setenv.
func TestSetupEnvironment(t *testing.T) {
	tests := []struct {
		name        string
		env         map[string]string
		wantService string
		wantVersion string
		wantExtra   attribute.KeyValue
		wantSampled bool
	}{
		{name: "config only", wantService: "gw", wantVersion: "1.2.3", wantSampled: true},
		{
			name:        "env overrides",
			env:         map[string]string{"OTEL_SERVICE_NAME": "from-env", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test,service.version=9"},
			wantService: "from-env", wantVersion: "9",
			wantExtra:   attribute.String("deployment.environment.name", "test"),
			wantSampled: true,
		},
		{name: "sampler from env", env: map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, wantService: "gw", wantVersion: "1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range append([]string{"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}, exporterEnv...) {
				t.Setenv(k, tt.env[k])
			}
			exp := tracetest.NewInMemoryExporter()
			tel, err := Setup(context.Background(), Config{ServiceName: "gw", ServiceVersion: "1.2.3"},
				WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			defer func() { _ = tel.Shutdown(context.Background()) }()

			_, span := tel.Tracer("test").Start(context.Background(), "op")
			span.End()
			spans := exp.GetSpans()
			if !tt.wantSampled {
				if len(spans) != 0 {
					t.Fatalf("got %d spans, want none (always_off)", len(spans))
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("got %d spans, want 1", len(spans))
			}
			res := spans[0].Resource
			want := []attribute.KeyValue{
				attribute.String("service.name", tt.wantService),
				attribute.String("service.version", tt.wantVersion),
			}
			if tt.wantExtra.Valid() {
				want = append(want, tt.wantExtra)
			}
			for _, kv := range want {
				if got, ok := res.Set().Value(kv.Key); !ok || got != kv.Value {
					t.Errorf("resource %s = %q, want %q", kv.Key, got.String(), kv.Value.String())
				}
			}
		})
	}
}

func TestMetricsHandler(t *testing.T) {
	t.Parallel()
	tel, _ := newTestTelemetry(t)
	counter, err := tel.Meter("test").Int64Counter("hashgate.test.widgets", metric.WithUnit("{widget}"))
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 3, metric.WithAttributes(attribute.String("kind", "blue")))

	srv := httptest.NewServer(tel.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}

	for _, want := range []string{
		"# TYPE hashgate_test_widgets_total counter",
		`kind="blue"`,
		"go_goroutines",
		`service_name="hashgate-test"`, // target_info from the resource
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics output lacks %q:\n%s", want, body)
		}
	}
	if m := findMetric(t, tel, "hashgate_test_widgets_total", map[string]string{"kind": "blue"}); m == nil || m.GetCounter().GetValue() != 3 {
		t.Errorf("hashgate_test_widgets_total{kind=blue} = %v, want 3", m)
	}
}

func TestNilTelemetry(t *testing.T) {
	t.Parallel()
	var tel *Telemetry
	_, span := tel.Tracer("x").Start(context.Background(), "op")
	span.End()
	if span.SpanContext().IsValid() {
		t.Error("nil Telemetry produced a real span")
	}
	c, err := tel.Meter("x").Int64Counter("c")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 1)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("MetricsHandler status %d", rec.Code)
	}
}

func TestShutdownTwice(t *testing.T) {
	t.Parallel()
	tel, err := Setup(context.Background(), Config{ServiceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown #%d: %v", i+1, err)
		}
	}
}
