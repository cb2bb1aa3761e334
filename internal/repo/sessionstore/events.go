package sessionstore

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// A session's events are written in the script of the change (session_event.lua) to where the
// layout keeps the user's pending events — the per-user layout's hash (session_event_hash: the
// script's one key), the per-session layout's outbox stream (session_event_stream: one more
// key) — and the relay copies them into the tenant's stream (internal/repo/eventstore).

// eventWrite is what a session write script needs for its events: env, the envelope (its last
// argument; "" when it writes none), outbox, the key its layout declares last for them ("" per
// user, or with no envelope), and the user's tag, which the relay is told after the script ran.
// counted: the script answers {'OK', sessions ended}, and appended events only when that is
// not 0 (ending).
type eventWrite struct {
	tag, env, outbox string
	counted          bool
}

// ending is w for a script that answers {'OK', sessions ended} (a revocation, a revoke-all):
// the relay is told only when it ended some, so that revoking a session already gone, which
// appends nothing, wakes no relay.
func (w eventWrite) ending() eventWrite {
	w.counted = true
	return w
}

// eventWrite is the eventWrite of a write to tenant's session ref (Part "" for a write of
// several sessions; tenant "" when the script reads it from the sessions); mayEnd: the write
// may end sessions (a revocation, a create that may evict), whose events the ends-only setting
// writes. Under it the envelope says so and session_event.lua drops the other types.
func (r *Sessions) eventWrite(ctx context.Context, tenant string, ref session.Ref, mayEnd bool) eventWrite {
	only := ""
	switch r.o.Outbox {
	case events.SessionEventsAll:
	case events.SessionEventsEnds:
		if !mayEnd {
			return eventWrite{tag: ref.Tag}
		}
		only = "ends"
	default:
		return eventWrite{tag: ref.Tag}
	}
	return eventWrite{tag: ref.Tag, env: events.Envelope(ctx, tenant, r.o.Events, ref.Tag, ref.Part, string(r.mode), only),
		outbox: r.layout.outboxKey(ref.Tag)}
}

// runEvents runs a session write script that may append events on c (runOn): keys, then the
// outbox w names; args, then w's envelope. Once it ran and may have appended (appended), the
// relay is told the user's tag; a refusal appends nothing, so it wakes no relay (events a dead
// gateway left wait for the user's next write that appends, or for the sweep).
func (r *Sessions) runEvents(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, w eventWrite, keys, args []string) (repo.Reply, error) {
	if w.outbox != "" {
		keys = append(keys, w.outbox)
	}
	rep, err := r.runOn(ctx, c, name, l, keys, append(args, w.env))
	if err == nil && w.env != "" && r.o.Relay != nil && appended(rep, w.counted) {
		r.o.Relay(w.tag)
	}
	return rep, err
}

// appended reports whether a session write script that answered rep may have appended events:
// a change (OK; with counted, one that ended sessions) or a wrong MFA code
// (session.mfa_failed); every other answer is a refusal.
func appended(rep repo.Reply, counted bool) bool {
	if counted {
		n, err := rep.Int(0)
		return rep.Code() == repo.CodeOK && err == nil && n > 0
	}
	return rep.Code() == repo.CodeOK || rep.Code() == repo.CodeWrongCode
}
