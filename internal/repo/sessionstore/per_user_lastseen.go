package sessionstore

import (
	"strconv"

	"github.com/redis/rueidis"
)

// Last use in the per-user layout. Every idle refresh (session_u_authorize.lua) makes the
// session's fields expire at min(now + idle, absolute deadline), and so does a create from its
// createdAtMs; rotation and verify keep the fields' expiry unchanged.
// While that end is not the deadline, the refresh's instant is the marker's expiry
// (HPEXPIRETIME of the live marker "<idPart>:live") minus the session's idle timeout, and
// "<idPart>:lastSeenAtMs" is not stored (it would cost each refreshed session a field: 356 B of
// Redis per session become 420 B). A refresh capped by the deadline stores it; one that is not
// deletes a stored one (a capped refresh's).
//
// So the last use is the newest of the stored lastSeenAtMs, the marker's expiry minus the idle
// timeout, and the session's createdAtMs. Each is never later than the true last use (a capped
// window ends before the refresh's instant + idle), and the newest is it: what every reader
// answered when the refresh always wrote the field. session_u_create.lua's eviction order
// takes the same newest (with lastRotatedAtMs).

// perUserLastSeen gives m (a session's flat view: sessionView's map) the lastSeenAtMs its readers
// decode: the marker's expiry exp (Unix ms; ≤ 0 when it has none or the session is gone) minus
// the idle timeout, when that is newer than what m holds (the stored value, else createdAtMs).
// A malformed value is left alone: decodeView refuses the session as corrupt, as it would have.
func perUserLastSeen(m map[string]string, exp int64) {
	if exp <= 0 {
		return
	}
	idle := ImplicitIdle.Milliseconds()
	if v, ok := m[fieldIdleTimeout]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return
		}
		idle = n
	}
	seen := exp - idle
	for _, name := range []string{fieldLastSeenAt, fieldCreatedAt} {
		v, ok := m[name]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n >= seen {
			return
		}
	}
	m[fieldLastSeenAt] = strconv.FormatInt(seen, 10)
}

// markerExpiry is the command reading when the session's marker expires (HPEXPIRETIME):
// -2 when it does not exist, -1 when it has no field TTL.
func (r perUserLayout) markerExpiry(key, part string) rueidis.Completed {
	return r.client.B().Hpexpiretime().Key(key).Fields().Numfields(1).Field(partField(part, fieldLive)).Build()
}
