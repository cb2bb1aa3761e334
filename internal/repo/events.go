package repo

// Event stream keys (docs/KEYS.md "Events"; internal/events). A tenant's stream carries the
// tenant's tag, so a store whose keys carry it (tokens) appends in the script of the change; a
// user's outbox carries the user's tag, for the session scripts, and is relayed into the
// tenant's stream (internal/repo/eventstore).

// EventStream is the tenant's event stream <prefix>:v1:events:{<tenantTag>}.
func (k Keys) EventStream(tenantTag string) string { return k.Key("events", tenantTag) }

// EventOutbox is a user's outbox <prefix>:v1:evoutbox:{<userTag>}.
func (k Keys) EventOutbox(userTag string) string { return k.Key("evoutbox", userTag) }

// EventRelayed is the relay's checkpoint of one user's outbox in the tenant's slot:
// <prefix>:v1:events:{<tenantTag>}:relayed:<userTag>, the last outbox id copied.
func (k Keys) EventRelayed(tenantTag, userTag string) string {
	return k.Key("events", tenantTag, "relayed", userTag)
}
