package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// NewLogger returns a JSON logger at level whose records carry trace_id and
// span_id (top level, whatever groups the logger has) when logged with a
// context holding a valid span, e.g. logger.InfoContext(ctx, ...).
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	return slog.New(newTraceHandler(h))
}

// ParseLevel parses debug, info, warn or error, case-insensitively; the empty
// string means info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return slog.LevelInfo, fmt.Errorf("telemetry: unknown log level %q (want debug, info, warn or error)", s)
	}
}

// traceHandler adds trace_id and span_id to records. To keep them at the top
// level once the logger has groups, it remembers the handler as it was before
// the first WithGroup (root) and the calls made since (ops), and replays those
// calls on root.WithAttrs(ids) for records that carry a span.
type traceHandler struct {
	root  slog.Handler // attrs applied, no group opened yet
	inner slog.Handler // root with ops applied
	ops   []func(slog.Handler) slog.Handler
}

func newTraceHandler(h slog.Handler) *traceHandler {
	return &traceHandler{root: h, inner: h}
}

func (h *traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return h.inner.Handle(ctx, r)
	}
	ids := []slog.Attr{
		slog.String("trace_id", sc.TraceID().String()),
		slog.String("span_id", sc.SpanID().String()),
	}
	if len(h.ops) == 0 {
		// A record that names its trace itself (the audit log's lines) keeps it: JSON with
		// the key twice is read differently by different parsers.
		if recordHas(r, "trace_id") {
			ids = ids[1:]
		}
		r = r.Clone()
		r.AddAttrs(ids...)
		return h.inner.Handle(ctx, r)
	}
	hh := h.root.WithAttrs(ids)
	for _, op := range h.ops {
		hh = op(hh)
	}
	return hh.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if len(h.ops) == 0 {
		root := h.root.WithAttrs(attrs)
		return &traceHandler{root: root, inner: root}
	}
	return &traceHandler{
		root:  h.root,
		inner: h.inner.WithAttrs(attrs),
		ops:   append(slices.Clip(h.ops), func(hh slog.Handler) slog.Handler { return hh.WithAttrs(attrs) }),
	}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &traceHandler{
		root:  h.root,
		inner: h.inner.WithGroup(name),
		ops:   append(slices.Clip(h.ops), func(hh slog.Handler) slog.Handler { return hh.WithGroup(name) }),
	}
}

// recordHas reports whether r has a top-level attribute named key.
func recordHas(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
