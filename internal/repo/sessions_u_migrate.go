package repo

import (
	"cmp"
	"context"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

var scriptSessionMigrate = script("session_migrate")

// sessMigrateAttempts bounds migrate's optimistic loop: each attempt reads the device index
// and runs session_migrate.lua with every member's hash declared; a session a per-session
// gateway created or rotated in between makes the script refuse (nothing written) and the loop
// read again.
const sessMigrateAttempts = 4

// migrate moves every session of the user with tag that a per-session gateway wrote (its hash
// and the device index member) into the user's hash, on c, in one script (session_migrate.lua),
// and deletes the index and the legacy hashes. Legacy sessions that are gone are dropped;
// corrupt ones are dropped and counted. Gateways migrating the same user at once are safe: the
// script is atomic and a second run finds nothing left to move.
//
// It is not a durable write (store.Durable): it ends no credential. Every session that was
// live stays live under the same token, and should a failover lose it, the per-session state
// it started from comes back whole (the index and hashes), which the next touch migrates
// again. A credential-ending write that follows it (a revoke, a rotation) is confirmed with
// WAIT, which covers the migration too: replication applies writes in order.
func (r *Sessions) migrate(ctx context.Context, c rueidis.Client, tag string) error {
	for range sessMigrateAttempts {
		parts, err := r.membersOn(ctx, c, tag, MaxSessionsPerUser)
		if err != nil {
			return err
		}
		keys := make([]string, 0, 2+len(parts))
		keys = append(keys, r.userKey(tag), r.devicesKey(tag))
		for _, p := range parts {
			keys = append(keys, r.sessionKey(session.Ref{Tag: tag, Part: p}))
		}
		rep, err := r.runOn(ctx, c, "session_migrate", scriptSessionMigrate, keys,
			append([]string{strconv.Itoa(SchemaVersion)}, parts...))
		if err != nil {
			return err
		}
		switch rep.Code() {
		case CodeOK: // {'OK', moved, dropped as corrupt}
			d := rep.Reader()
			moved, corrupt := d.Int(0), d.Int(1)
			if err := cmp.Or(rep.Want(2), d.Err()); err != nil {
				return r.badReply(ctx, "session_migrate", err)
			}
			for range corrupt {
				r.o.Metrics.Read(ctx, sessObject, Corrupt)
			}
			if corrupt > 0 {
				r.o.Logger.WarnContext(ctx, "corrupt per-session hashes dropped while moving a user's sessions into the user's hash",
					"key_pattern", r.sessionKeyPattern(), "dropped", corrupt)
			}
			if moved > 0 || corrupt > 0 {
				r.o.Metrics.Transition(ctx, sessObject, "migrate", "ok")
			}
			return nil
		case CodeRetry: // {'RETRY', members not passed}
			if err := rep.Want(1); err != nil {
				return r.badReply(ctx, "session_migrate", err)
			}
			r.o.Metrics.Transition(ctx, sessObject, "migrate", "retry")
		default:
			return r.badReply(ctx, "session_migrate", rep.Unexpected())
		}
	}
	r.o.Metrics.Transition(ctx, sessObject, "migrate", "contended")
	return apperr.New(apperr.Unavailable, "The user's sessions kept changing while they were being moved to the per-user layout; retry shortly.")
}
