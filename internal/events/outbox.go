package events

import (
	"strconv"
	"strings"
)

// A session event waiting in the user's session hash (the per-user layout) is one field value:
// the stream entry's fields one a line, in outboxOrder, the data (JSON, which holds no raw
// newline) last — the kit's snippet internal/repo/lua/event_outbox.lua writes it.
var outboxOrder = [...]string{FieldType, FieldTime, FieldTenant, FieldSubject, FieldActor, FieldRequestID, FieldTraceID, FieldData}

// OutboxFields turns such a value into the stream entry's field values (what relay.lua appends
// and FromEntry reads); ok is false when it does not have every line.
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

// OutboxID is the relay's id of the user's event number n: "<n div 1000>-<n mod 1000>",
// ordered as the numbers and on the scale of stream ids (the first event of an empty outbox is
// numbered Redis's time in ms × 1000).
func OutboxID(n int64) string {
	return strconv.FormatInt(n/1000, 10) + "-" + strconv.FormatInt(n%1000, 10)
}
