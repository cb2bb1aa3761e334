package events

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestAuditAggregatesRepeatedFailures: the first failure of a kind in a window is a line at
// once; the next ones are one "audit repeated" line with their count when the window ends; a
// security event is one line each; a non-security type none.
func TestAuditAggregatesRepeatedFailures(t *testing.T) {
	var buf bytes.Buffer
	a := NewAudit(slog.New(slog.NewTextHandler(&buf, nil)), time.Minute)
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	ctx := context.Background()
	for range 50 {
		a.Failure(ctx, "auth.invalid-credentials", "", "", "", "r", "")
	}
	a.Event(ctx, Event{Type: TokenIssued, Tenant: "acme", Actor: "system", Subject: "tok1"})
	a.Event(ctx, Event{Type: QuoteCreated, Tenant: "acme", Subject: "q1"})
	if n := strings.Count(buf.String(), "msg=audit "); n != 2 {
		t.Fatalf("%d audit lines before the window ended, want 2:\n%s", n, &buf)
	}
	now = now.Add(time.Minute)
	a.Flush(ctx)
	if !strings.Contains(buf.String(), `msg="audit repeated" event=auth.invalid-credentials`) || !strings.Contains(buf.String(), "count=49") {
		t.Fatalf("no aggregated line:\n%s", &buf)
	}
	if len(a.seen) != 0 {
		t.Fatalf("%d kinds kept after their window", len(a.seen))
	}
}
