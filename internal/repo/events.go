package repo

// Event stream keys (docs/KEYS.md "Events"; internal/events). A tenant's stream carries the
// tenant's tag, so a store whose keys carry it (tokens) appends in the script of the change; a
// user's session events wait under the user's tag, for the session scripts, and are relayed
// into the tenant's stream (internal/repo/eventstore): in the per-user layout as fields of the
// user's session hash (the snippet lua/event_outbox.lua), in the per-session layout in the
// user's outbox stream.

// EventStream is the tenant's event stream <prefix>:v1:events:{<tenantTag>}.
func (k Keys) EventStream(tenantTag string) string { return k.Key("events", tenantTag) }

// EventOutbox is a user's outbox stream <prefix>:v1:evoutbox:{<userTag>} (per-session layout).
func (k Keys) EventOutbox(userTag string) string { return k.Key("evoutbox", userTag) }

// EventRelayedHash is the relay's checkpoints of a tenant's users in the tenant's slot, one
// field per user tag holding the last outbox id copied (servers with hash field expiration):
// <prefix>:v1:events:{<tenantTag>}:relayed.
func (k Keys) EventRelayedHash(tenantTag string) string { return k.Key("events", tenantTag, "relayed") }

// EventRelayed is the relay's checkpoint of one user's outbox in the tenant's slot:
// <prefix>:v1:events:{<tenantTag>}:relayed:<userTag>, the last outbox id copied (servers
// without hash field expiration).
func (k Keys) EventRelayed(tenantTag, userTag string) string {
	return k.Key("events", tenantTag, "relayed", userTag)
}

// EventOutboxMax bounds the session events pending in one user's session hash (the per-user
// layout): an append beyond drops the oldest. The snippet lua/event_outbox.lua holds the same
// number (EVENT_OUTBOX_MAX; TestEventOutboxMaxMatchesSnippet).
const EventOutboxMax = 2000
