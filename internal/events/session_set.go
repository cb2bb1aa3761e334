package events

import "slices"

// SessionEvents is which session events a gateway writes (GATEWAY_SESSION_EVENTS): all of them,
// only the ends of sessions (revoked, logged out, evicted: what a cache or a JWT consumer must
// act on), or none. The ends are the default: every other session write then costs what it
// costs without events, and the audit log still has a line for each change (docs/EVENTS.md).
type SessionEvents string

const (
	SessionEventsAll  SessionEvents = "all"
	SessionEventsEnds SessionEvents = "ends"
	SessionEventsOff  SessionEvents = "off"
)

// sessionEnds are the types SessionEventsEnds writes; session_event.lua holds the same list.
var sessionEnds = []Type{SessionRevoked, SessionLoggedOut, SessionEvicted}

// SessionEnds lists the session types written under SessionEventsEnds.
func SessionEnds() []Type { return slices.Clone(sessionEnds) }

// Writes reports whether s writes the session event type typ.
func (s SessionEvents) Writes(typ Type) bool {
	return s == SessionEventsAll || s == SessionEventsEnds && slices.Contains(sessionEnds, typ)
}
