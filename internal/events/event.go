package events

import "time"

// Event is one entry of a tenant's stream, as GET /v1/events answers it.
type Event struct {
	// ID is the entry id in the tenant's stream ("<ms>-<seq>"): ordered, stable, the cursor.
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
