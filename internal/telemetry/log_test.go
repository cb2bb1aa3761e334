package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestParseLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{in: "", want: slog.LevelInfo},
		{in: "debug", want: slog.LevelDebug},
		{in: "INFO", want: slog.LevelInfo},
		{in: "Warn", want: slog.LevelWarn},
		{in: " error ", want: slog.LevelError},
		{in: "verbose", wantErr: true},
		{in: "warning", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseLevel(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseLevel(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseLevel(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestLoggerTraceIDs(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		TraceFlags: trace.FlagsSampled,
	})
	spanCtx := trace.ContextWithSpanContext(context.Background(), sc)
	const wantTrace, wantSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"

	tests := []struct {
		name     string
		ctx      context.Context
		logger   func(*slog.Logger) *slog.Logger
		wantIDs  bool
		wantPath []string // where "k" must appear
		attrs    []any    // logged besides "k"
	}{
		{name: "no span", ctx: context.Background(), wantPath: []string{"k"}},
		{name: "invalid span", ctx: trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}), wantPath: []string{"k"}},
		{name: "span", ctx: spanCtx, wantIDs: true, wantPath: []string{"k"}},
		{
			// The audit log names the trace of the request that caused an event; with the
			// request's span in the context, the line must still hold one trace_id.
			name: "span and a record carrying the trace id", ctx: spanCtx, wantIDs: true, wantPath: []string{"k"},
			attrs: []any{"trace_id", wantTrace},
		},
		{
			name: "span with attrs and group", ctx: spanCtx, wantIDs: true, wantPath: []string{"req", "k"},
			logger: func(l *slog.Logger) *slog.Logger { return l.With("a", 1).WithGroup("req").With("b", 2) },
		},
		{
			name: "no span with group", ctx: context.Background(), wantPath: []string{"req", "k"},
			logger: func(l *slog.Logger) *slog.Logger { return l.WithGroup("req") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := NewLogger(&buf, slog.LevelInfo)
			if tt.logger != nil {
				l = tt.logger(l)
			}
			l.DebugContext(tt.ctx, "dropped")
			l.InfoContext(tt.ctx, "hello", append([]any{"k", "v"}, tt.attrs...)...)

			var rec map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("want exactly one JSON record: %v\n%s", err, buf.String())
			}
			if rec["msg"] != "hello" {
				t.Errorf("msg = %v", rec["msg"])
			}
			if tt.wantIDs {
				if rec["trace_id"] != wantTrace || rec["span_id"] != wantSpan {
					t.Errorf("trace_id/span_id = %v/%v, want %s/%s (top level)\n%s", rec["trace_id"], rec["span_id"], wantTrace, wantSpan, buf.String())
				}
			} else if _, ok := rec["trace_id"]; ok {
				t.Errorf("unexpected trace_id: %s", buf.String())
			}
			if n := strings.Count(buf.String(), `"trace_id"`); n > 1 {
				t.Errorf("trace_id written %d times: %s", n, buf.String())
			}
			m := rec
			for _, p := range tt.wantPath[:len(tt.wantPath)-1] {
				m, _ = m[p].(map[string]any)
			}
			if m[tt.wantPath[len(tt.wantPath)-1]] != "v" {
				t.Errorf("attribute k not at %v: %s", tt.wantPath, buf.String())
			}
		})
	}
}
