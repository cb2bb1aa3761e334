package telemetry

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// newTestTelemetry returns a Telemetry whose finished spans land synchronously
// in the returned exporter. Read the spans before the test ends: Shutdown
// (run at cleanup) empties the in-memory exporter.
func newTestTelemetry(t *testing.T) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := Setup(context.Background(), Config{ServiceName: "hashgate-test", ServiceVersion: "0.0.1"},
		WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return tel, exp
}

// findMetric returns the sample of family name whose labels include want.
func findMetric(t *testing.T, tel *Telemetry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	families, err := tel.Registry.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got, ok := labels[k]; !ok || got != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}
