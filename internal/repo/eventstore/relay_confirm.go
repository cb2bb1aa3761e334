package eventstore

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// runRelay runs relay.lua confirmed like a credential-ending write (store.Durable: WAIT, and
// 503-class errors while the tenant's node has no replica), whether it copied entries or only
// skipped those its checkpoint names. The caller deletes the entries from the user's outbox
// only after it returns without an error: in a cluster the tenant's slot and the user's fail
// over apart, so a copy the tenant's node loses in a failover must still be in the outbox for
// the next relay. Unconfirmed, the entries stay there (late, never lost).
func (s *Store) runRelay(ctx context.Context, keys, args []string) (repo.Reply, error) {
	var rep repo.Reply
	err := s.durable.Run(ctx, s.client, func(c rueidis.Client) (bool, error) {
		var err error
		rep, err = repo.RunScript(ctx, c, s.metrics, "events_relay", "events relay", scriptRelay, keys, args)
		return err == nil, err
	})
	return rep, err
}
