package events

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Retention bounds a stream by age and by count: each append trims entries older than MaxAge
// (XTRIM MINID ~) and keeps about MaxLen (XADD MAXLEN ~), and gives the key MaxAge as its TTL.
// Off (GATEWAY_EVENTS=false) appends nothing: the envelope then carries a max age of 0.
type Retention struct {
	MaxAge time.Duration
	MaxLen int
	Off    bool
}

// Default retention of a tenant's stream (GATEWAY_EVENTS_MAX_AGE, GATEWAY_EVENTS_MAX_LEN):
// long enough for a webhook retried for 24 h, short enough to stay small.
const (
	DefaultMaxAge = 72 * time.Hour
	DefaultMaxLen = 10000
)

// Envelope is the one script argument that carries what every event of a change shares (the
// snippet event_append.lua reads it): tenant, actor, request id, trace id, and the stream's
// retention, separated by newlines (none of them can hold one: the values are checked here);
// then extra, for a session's events the user's tag and the session's idPart.
func Envelope(ctx context.Context, tenant string, r Retention, extra ...string) string {
	o, trace := OriginFrom(ctx)
	return EnvelopeOf(tenant, o.Actor, o.RequestID, trace, r, extra...)
}

// EnvelopeOf is Envelope for an origin recorded earlier (a refusal's event is written after
// its request ended).
func EnvelopeOf(tenant, actor, requestID, traceID string, r Retention, extra ...string) string {
	maxAge := r.MaxAge.Milliseconds()
	if r.Off {
		maxAge = 0
	}
	parts := append([]string{tenant, actor, requestID, traceID,
		strconv.FormatInt(maxAge, 10), strconv.Itoa(r.MaxLen)}, extra...)
	for i, p := range parts {
		if i == 4 || i == 5 {
			continue
		}
		if strings.ContainsAny(p, "\r\n") {
			parts[i] = ""
		}
	}
	return strings.Join(parts, "\n")
}

// Stream entry field names, as event_append.lua writes them.
const (
	FieldType      = "type"
	FieldTime      = "timeMs"
	FieldTenant    = "tenant"
	FieldSubject   = "subject"
	FieldActor     = "actor"
	FieldRequestID = "requestId"
	FieldTraceID   = "traceId"
	FieldData      = "data"
	// FieldPacked is the one field of an entry the session relay copied: the fields above
	// packed one a line, as the user's outbox holds them (OutboxFields), so that the relay's
	// copy is one value rather than eight field, value pairs.
	FieldPacked = "event"
)

// FromEntry decodes a stream entry (id, field values, or the one FieldPacked) into an Event;
// an entry without a type or a time is corrupt.
func FromEntry(id string, f map[string]string) (Event, error) {
	if v, ok := f[FieldPacked]; ok {
		if f, ok = OutboxFields(v); !ok {
			return Event{}, fmt.Errorf("event %s: malformed packed event", id)
		}
	}
	ms, err := strconv.ParseInt(f[FieldTime], 10, 64)
	if err != nil || f[FieldType] == "" {
		return Event{}, fmt.Errorf("event %s: missing or malformed type or time", id)
	}
	data := f[FieldData]
	if data == "" {
		data = "{}"
	}
	return Event{ID: id, Type: Type(f[FieldType]), Time: time.UnixMilli(ms).UTC(), Tenant: f[FieldTenant],
		Subject: f[FieldSubject], Actor: f[FieldActor], RequestID: f[FieldRequestID], TraceID: f[FieldTraceID],
		Data: []byte(data)}, nil
}

// Salvage is what can be read of an entry FromEntry refused (a malformed time, a packed value
// short of lines): its id, type, subject and tenant when present, empty data, so that it can
// still be delivered to the webhooks that want its type, in its subject's order.
func Salvage(id string, f map[string]string) Event {
	f = salvageFields(f)
	return Event{ID: id, Type: Type(f[FieldType]), Tenant: f[FieldTenant], Subject: f[FieldSubject], Data: []byte("{}")}
}

// ValidID reports whether s is a stream entry id, "<ms>-<seq>" (a cursor or Last-Event-ID).
func ValidID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok || len(ms) == 0 || len(ms) > 20 || len(seq) == 0 || len(seq) > 20 {
		return false
	}
	_, e1 := strconv.ParseUint(ms, 10, 64)
	_, e2 := strconv.ParseUint(seq, 10, 64)
	return e1 == nil && e2 == nil
}

// OrDefault fills a zero MaxAge or MaxLen with the default.
func (r Retention) OrDefault() Retention {
	if r.MaxAge <= 0 {
		r.MaxAge = DefaultMaxAge
	}
	if r.MaxLen <= 0 {
		r.MaxLen = DefaultMaxLen
	}
	return r
}
