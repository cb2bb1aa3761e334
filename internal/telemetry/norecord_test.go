package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"
)

// With nothing consuming spans the gateway records none, yet an incoming W3C trace context
// still reaches the handler (so log lines carry the caller's trace id).
func TestNotRecordingKeepsIncomingTraceContext(t *testing.T) {
	for _, k := range exporterEnv {
		t.Setenv(k, "")
	}
	tel, err := Setup(context.Background(), Config{ServiceName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if tel.Recording() {
		t.Fatal("recording with no exporter and no processor")
	}
	e := echo.New()
	var got trace.SpanContext
	e.Use(EchoMiddleware(tel, "t"))
	e.GET("/x", func(c echo.Context) error {
		got = trace.SpanContextFromContext(c.Request().Context())
		return c.NoContent(http.StatusNoContent)
	})
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	e.ServeHTTP(httptest.NewRecorder(), req)
	if got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("trace id %s", got.TraceID())
	}
}
