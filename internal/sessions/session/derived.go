package session

import "sync/atomic"

// Derived keeps one value computed from one decoded copy of a session, for the requests that
// copy answers: forward auth keeps there the assertion it signed for the session, so a request
// answered from the gateway's copy hands it out without a lookup of its own. A new read of
// the session makes a new copy with an empty Derived, and a copy dropped (revoked, expired,
// invalidated) takes its value with it. One kind of value per Derived (atomic.Value's rule).
type Derived struct{ v atomic.Value }

// Load is the kept value (nil when none, or d is nil).
func (d *Derived) Load() any {
	if d == nil {
		return nil
	}
	return d.v.Load()
}

// Store keeps v (nothing when d is nil).
func (d *Derived) Store(v any) {
	if d != nil {
		d.v.Store(v)
	}
}
