package events

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Audit writes the audit log: every security event as an info line ("audit": type, tenant,
// actor, subject — a keyed id —, outcome, request and trace id), never a secret. Repeated
// failures are aggregated: the first failure of a kind (type, tenant, actor, subject) in a
// window is logged at once; the ones after it in that window are counted and logged as one
// "audit repeated" line when the window ends (at the next failure of that kind or at Flush).
// The pending counts are bounded (maxPending kinds; beyond, a failure is logged at once).
// Safe for concurrent use; a nil *Audit logs nothing.
type Audit struct {
	log    *slog.Logger
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	seen   map[auditKey]*auditCount
}

type auditKey struct {
	typ, tenant, actor, subject string
}

type auditCount struct {
	since time.Time
	n     int // failures after the first, in the window
}

// maxPending bounds the kinds of failure counted at once.
const maxPending = 10000

// DefaultAuditWindow is the aggregation window of repeated failures.
const DefaultAuditWindow = time.Minute

// NewAudit returns the audit log on l, aggregating repeated failures per window.
func NewAudit(l *slog.Logger, window time.Duration) *Audit {
	if window <= 0 {
		window = DefaultAuditWindow
	}
	return &Audit{log: l, window: window, now: time.Now, seen: map[auditKey]*auditCount{}}
}

// Event logs a security event written to the stream (its outcome "success"; the MFA
// failures and lock "failure", aggregated).
func (a *Audit) Event(ctx context.Context, e Event) {
	if a == nil {
		return
	}
	if i, ok := Lookup(e.Type); !ok || !i.Security {
		return
	}
	if e.Type == SessionMFAFailed || e.Type == SessionMFALocked {
		a.Failure(ctx, string(e.Type), e.Tenant, e.Actor, e.Subject, e.RequestID, e.TraceID)
		return
	}
	a.line(ctx, "audit", string(e.Type), e.Tenant, e.Actor, e.Subject, "success", e.RequestID, e.TraceID, 1)
}

// Change logs a security event of a change this gateway made whose event is not written
// (GATEWAY_SESSION_EVENTS leaves it out; the relay logs the written ones): the actor, request
// and trace id from ctx (OriginFrom). count > 1 is one change of that many (a revoke-all's
// sessions, subject the user's tag).
func (a *Audit) Change(ctx context.Context, typ Type, tenant, subject string, count int) {
	if a == nil {
		return
	}
	o, trace := OriginFrom(ctx)
	if count > 1 {
		if i, ok := Lookup(typ); ok && i.Security {
			a.line(ctx, "audit", string(typ), tenant, o.Actor, subject, "success", o.RequestID, trace, count)
		}
		return
	}
	a.Event(ctx, Event{Type: typ, Tenant: tenant, Actor: o.Actor, Subject: subject, RequestID: o.RequestID, TraceID: trace})
}

// Failure logs a refused request (typ names the refusal: "auth.invalid-credentials",
// "ratelimit.refused", ...), aggregated per window with the same type, tenant, actor and subject.
func (a *Audit) Failure(ctx context.Context, typ, tenant, actor, subject, requestID, traceID string) {
	if a == nil {
		return
	}
	k := auditKey{typ, tenant, actor, subject}
	now := a.now()
	a.mu.Lock()
	c, ok := a.seen[k]
	var repeated int
	switch {
	case ok && now.Sub(c.since) < a.window:
		c.n++
		a.mu.Unlock()
		return
	case ok:
		repeated = c.n
		c.since, c.n = now, 0
	case len(a.seen) < maxPending:
		a.seen[k] = &auditCount{since: now}
	}
	a.mu.Unlock()
	if repeated > 0 {
		a.line(ctx, "audit repeated", typ, tenant, actor, subject, "failure", "", "", repeated)
	}
	a.line(ctx, "audit", typ, tenant, actor, subject, "failure", requestID, traceID, 1)
}

// Flush logs the counts of the windows that ended and forgets them (Run calls it).
func (a *Audit) Flush(ctx context.Context) {
	if a == nil {
		return
	}
	now := a.now()
	type done struct {
		k auditKey
		n int
	}
	var out []done
	a.mu.Lock()
	for k, c := range a.seen {
		if now.Sub(c.since) >= a.window {
			if c.n > 0 {
				out = append(out, done{k, c.n})
			}
			delete(a.seen, k)
		}
	}
	a.mu.Unlock()
	for _, d := range out {
		a.line(ctx, "audit repeated", d.k.typ, d.k.tenant, d.k.actor, d.k.subject, "failure", "", "", d.n)
	}
}

// Run flushes every window until ctx ends.
func (a *Audit) Run(ctx context.Context) {
	t := time.NewTicker(a.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush(context.Background())
			return
		case <-t.C:
			a.Flush(ctx)
		}
	}
}

func (a *Audit) line(ctx context.Context, msg, typ, tenant, actor, subject, outcome, requestID, traceID string, count int) {
	a.log.LogAttrs(ctx, slog.LevelInfo, msg, slog.String("event", typ), slog.String("tenant", tenant),
		slog.String("actor", actor), slog.String("subject", subject), slog.String("outcome", outcome),
		slog.String("request_id", requestID), slog.String("trace_id", traceID), slog.Int("count", count))
}
