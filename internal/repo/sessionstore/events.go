package sessionstore

import (
	"context"
	"strings"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// A session's events go to the user's outbox in the script of the change (session_event.lua),
// and the relay copies them into the tenant's stream (internal/repo/eventstore).

// outbox is the user's outbox key and the envelope of a write to tenant's session ref (Part
// "" for a write of several sessions; tenant "" when the script reads it from the sessions);
// both empty when session events are off (Options.Outbox).
func (r *Sessions) outbox(ctx context.Context, tenant string, ref session.Ref) (key, envelope string) {
	if !r.o.Outbox {
		return "", ""
	}
	return r.keys.EventOutbox(ref.Tag), events.Envelope(ctx, tenant, r.o.Events, ref.Tag, ref.Part)
}

// withOutbox is a script's keys: keys, then the user's outbox when session events are on.
func (r *Sessions) withOutbox(outbox string, keys ...string) []string {
	if outbox == "" {
		return keys
	}
	return append(keys, outbox)
}

// relay tells the relay about the user of a script whose last key is the user's outbox: the
// script ran, so it may have appended events (a refusal appends none; the relay finds nothing).
func (r *Sessions) relay(keys []string) {
	if r.o.Relay == nil || len(keys) == 0 {
		return
	}
	last := keys[len(keys)-1]
	if rest, ok := strings.CutPrefix(last, r.outboxPrefix); ok {
		r.o.Relay(strings.TrimSuffix(rest, "}"))
	}
}
