package repo

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
)

// Writes that end a credential are answered only once replicas have them (store.Durable): a
// session revocation, a logout, revoke-all and sign-out-elsewhere, a rotation and an MFA
// step-up (the old token's death), an eviction at the session cap, a token revocation with
// its cascade. Each runs its script inside Durable.Run, on one connection, and reports whether
// its outcome must be confirmed.
//
// An outcome that wrote nothing must be confirmed too when it may stand on an earlier,
// unconfirmed write: a retry after a 503 finds the session already gone or the token already
// revoked, by the very attempt whose WAIT timed out. WAIT measures only the writes of its own
// connection, so such a call first writes the durable marker — a tiny key of the same hash tag
// (same slot, same node), one second long — which moves its connection to the primary's current
// replication offset; the WAIT that follows then covers every write made before it, the
// earlier attempt's included.

// durableMarkerTTL is the marker's lifetime: it only has to exist for the WAIT.
const durableMarkerTTL = time.Second

// markerOnce writes the marker and deletes it in one step (replicated as both writes).
var markerOnce = LoadScript(ownScripts, "durable_marker_once")

// DurableMarker writes the marker of tag on c (the pinned connection of Durable.Run) and
// reports that the call must be confirmed; when no confirmation will follow (durability off,
// or auto on a deployment never seen with a replica) it writes nothing.
func DurableMarker(ctx context.Context, c rueidis.Client, k Keys, tag string) (bool, error) {
	return confirmMarker(ctx, c, k.Key("durable", tag))
}

// confirmMarker is DurableMarker with the marker's key.
func confirmMarker(ctx context.Context, c rueidis.Client, key string) (bool, error) {
	if !store.Confirms(c) {
		return false, nil
	}
	var err error
	if store.Asking(c) {
		// On the node importing the slot the marker is written and deleted at once: a marker
		// left there beside the migrating node's own copy would make MIGRATE refuse it
		// (BUSYKEY) and stop the migration. The two writes still move the connection's offset.
		err = markerOnce.Exec(ctx, c, []string{key}, []string{strconv.FormatInt(durableMarkerTTL.Milliseconds(), 10)}).Error()
	} else {
		err = c.Do(ctx, c.B().Set().Key(key).Value("1").Px(durableMarkerTTL).Build()).Error()
	}
	if err != nil {
		return false, CommandError("durable marker", err)
	}
	return true, nil
}
