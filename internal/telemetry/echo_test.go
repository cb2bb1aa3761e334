package telemetry

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

func TestEchoMiddleware(t *testing.T) {
	t.Parallel()
	const parentTrace = "0af7651916cd43dd8448eb211c80319c"
	tests := []struct {
		name        string
		method      string
		target      string
		traceparent string
		wantSpan    string // "" = no span and no metric
		wantRoute   string // http_route label; "" = absent
		wantStatus  string
	}{
		{name: "route template", method: http.MethodGet, target: "/items/secret-123?q=secret", wantSpan: "GET /items/:id", wantRoute: "/items/:id", wantStatus: "200"},
		{name: "handler error", method: http.MethodPost, target: "/fail", wantSpan: "POST /fail", wantRoute: "/fail", wantStatus: "418"},
		{name: "unmatched", method: http.MethodGet, target: "/secret-nowhere", wantSpan: "GET", wantStatus: "404"},
		{name: "remote parent", method: http.MethodGet, target: "/items/1", traceparent: "00-" + parentTrace + "-b7ad6b7169203331-01", wantSpan: "GET /items/:id", wantRoute: "/items/:id", wantStatus: "200"},
		{name: "healthz skipped", method: http.MethodGet, target: "/healthz"},
		{name: "metrics skipped", method: http.MethodGet, target: "/metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tel, exp := newTestTelemetry(t)
			e := echo.New()
			e.Use(EchoMiddleware(tel, "hashgate"))
			var handlerSpan trace.SpanContext
			e.GET("/items/:id", func(c echo.Context) error {
				handlerSpan = trace.SpanContextFromContext(c.Request().Context())
				return c.String(http.StatusOK, "ok")
			})
			e.POST("/fail", func(echo.Context) error { return echo.NewHTTPError(http.StatusTeapot, "nope") })
			e.GET("/healthz", func(c echo.Context) error { return c.NoContent(http.StatusOK) })
			e.GET("/metrics", echo.WrapHandler(tel.MetricsHandler()))

			req := httptest.NewRequest(tt.method, tt.target, nil)
			if tt.traceparent != "" {
				req.Header.Set("traceparent", tt.traceparent)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if tt.wantStatus != "" && strconv.Itoa(rec.Code) != tt.wantStatus {
				t.Errorf("response status %d, want %s", rec.Code, tt.wantStatus)
			}

			spans := exp.GetSpans()
			if tt.wantSpan == "" {
				if len(spans) != 0 {
					t.Errorf("got %d spans for a skipped path", len(spans))
				}
				if findMetric(t, tel, "http_server_requests_total", nil) != nil {
					t.Error("skipped path was counted")
				}
				return
			}

			if len(spans) != 1 {
				t.Fatalf("got %d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name != tt.wantSpan || s.SpanKind != trace.SpanKindServer {
				t.Errorf("span = %q kind %v, want %q server", s.Name, s.SpanKind, tt.wantSpan)
			}
			if tt.wantRoute != "" && !hasAttr(s.Attributes, attribute.String("http.route", tt.wantRoute)) {
				t.Errorf("span lacks http.route=%s: %v", tt.wantRoute, s.Attributes)
			}
			if tt.traceparent != "" {
				if got := s.SpanContext.TraceID().String(); got != parentTrace || !s.Parent.IsRemote() {
					t.Errorf("trace %s (remote parent %v), want continued trace %s", got, s.Parent.IsRemote(), parentTrace)
				}
				if handlerSpan.SpanID() != s.SpanContext.SpanID() {
					t.Error("handler context does not carry the server span")
				}
			}

			labels := map[string]string{"http_request_method": tt.method, "http_response_status_code": tt.wantStatus}
			if tt.wantRoute != "" {
				labels["http_route"] = tt.wantRoute
			}
			m := findMetric(t, tel, "http_server_requests_total", labels)
			if m == nil || m.GetCounter().GetValue() != 1 {
				t.Fatalf("http_server_requests_total%v = %v, want 1", labels, m)
			}
			for _, l := range m.GetLabel() {
				if tt.wantRoute == "" && l.GetName() == "http_route" {
					t.Errorf("unmatched request got http_route=%q", l.GetValue())
				}
				if strings.Contains(l.GetValue(), "secret") {
					t.Errorf("raw URL leaked into label %s=%q", l.GetName(), l.GetValue())
				}
			}
			if h := findMetric(t, tel, "http_server_request_duration_seconds", labels); h == nil || h.GetHistogram().GetSampleCount() != 1 {
				t.Errorf("http_server_request_duration_seconds%v = %v, want 1 sample", labels, h)
			}
		})
	}
}

func TestEchoMiddlewareNilTelemetry(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.Use(EchoMiddleware(nil, "hashgate"))
	e.GET("/x", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusNoContent {
		t.Errorf("status %d", rec.Code)
	}
}

func hasAttr(attrs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, kv := range attrs {
		if kv == want {
			return true
		}
	}
	return false
}
