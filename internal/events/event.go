package events

import (
	"slices"
	"strings"
	"time"
)

// Event is one entry of a tenant's stream, as GET /v1/events answers it.
type Event struct {
	// ID is the entry id in the tenant's stream ("<ms>-<seq>"): ordered, stable, a List position.
	ID   string
	Type Type
	// Time is Redis's clock when the change happened (ms).
	Time   time.Time
	Tenant string
	// Subject is the keyed id of what changed (a token id, a session id), never a secret.
	Subject string
	// Actor is who caused it: "token:<tokenId>", "session:<sessionId>" or "system".
	Actor     string
	RequestID string
	TraceID   string
	// Data is the type's small data object (catalogue.go names its keys), as JSON.
	Data []byte
}

// Filter narrows a read of the stream; zero fields match everything.
type Filter struct {
	Types   []Type
	Subject string
}

// scope names f and tenant in a List cursor: a cursor sent with other filters is refused.
func (f Filter) scope(tenant string) string {
	types := make([]string, len(f.Types))
	for i, t := range f.Types {
		types[i] = string(t)
	}
	slices.Sort(types)
	return "events\x00" + tenant + "\x00" + f.Subject + "\x00" + strings.Join(slices.Compact(types), ",")
}

// Match reports whether e passes f.
func (f Filter) Match(e Event) bool {
	if f.Subject != "" && e.Subject != f.Subject {
		return false
	}
	if len(f.Types) == 0 {
		return true
	}
	for _, t := range f.Types {
		if e.Type == t {
			return true
		}
	}
	return false
}
