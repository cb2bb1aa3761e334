// Package events is the gateway's event stream: the catalogue of event types (catalogue.go),
// the event model (event.go), who caused a change (origin.go, carried on the request context
// down to the stores), the stream entry's fields as the scripts write them (fields.go), the
// reading service behind GET /v1/events and its SSE stream (service.go), and the audit log of
// security events (audit.go).
//
// An event exists if and only if its change happened: the store script that makes the change
// appends the event in the same atomic step, to a Redis Stream under the same hash tag —
// the tenant's stream <prefix>:v1:events:{<tenantTag>} for tokens; for sessions (their keys
// carry the user's tag) the user's session hash (per-user layout: fields of the hash, so the
// write stays one key; outbox.go here decodes them) or outbox stream
// <prefix>:v1:evoutbox:{<userTag>} (per-session layout), which a relay moves into the
// tenant's stream exactly once (internal/repo/eventstore). An event's id
// is its entry id in the tenant's stream: ordered, stable, the cursor of GET /v1/events and the
// SSE Last-Event-ID. docs/EVENTS.md is the user's side of it.
//
// Never a secret in an event: a subject is a keyed id (a token's id, a session's id, whose
// user part is a keyed hash), never a token, a JWT, a code or a raw user id.
package events
