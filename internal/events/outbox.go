package events

import (
	"strconv"
	"strings"
)

// A session event waiting in the user's session hash (the per-user layout) is one field value:
// the stream entry's fields one a line, in outboxOrder, the data (JSON, which holds no raw
// newline) last — the kit's snippet internal/repo/lua/event_outbox.lua writes it.
var outboxOrder = [...]string{FieldType, FieldTime, FieldTenant, FieldSubject, FieldActor, FieldRequestID, FieldTraceID, FieldData}

// OutboxFields turns such a value into the stream entry's field values (what FromEntry reads;
// relay.lua appends the value itself, packed); ok is false when it does not have every line.
func OutboxFields(v string) (map[string]string, bool) {
	parts := strings.SplitN(v, "\n", len(outboxOrder))
	if len(parts) != len(outboxOrder) {
		return nil, false
	}
	m := make(map[string]string, len(outboxOrder))
	for i, name := range outboxOrder {
		m[name] = parts[i]
	}
	return m, true
}

// salvageFields is the field values of an entry FromEntry could not read: a packed entry's
// lines as far as they go, else the entry's own fields.
func salvageFields(f map[string]string) map[string]string {
	v, ok := f[FieldPacked]
	if !ok {
		return f
	}
	m := make(map[string]string, len(outboxOrder))
	for i, part := range strings.SplitN(v, "\n", len(outboxOrder)) {
		m[outboxOrder[i]] = part
	}
	return m
}

// OutboxValue is the outbox value of a stream entry's field values (OutboxFields' inverse):
// what the relay copies as the entry's FieldPacked.
func OutboxValue(f map[string]string) string {
	var b strings.Builder
	for i, name := range outboxOrder {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f[name])
	}
	return b.String()
}

// OutboxID is the relay's id of the user's event number n: "<n div 1000>-<n mod 1000>",
// ordered as the numbers and on the scale of stream ids (the first event of an empty outbox is
// numbered Redis's time in ms × 1000).
func OutboxID(n int64) string {
	return strconv.FormatInt(n/1000, 10) + "-" + strconv.FormatInt(n%1000, 10)
}
