package eventstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestRelayKeepsOutboxUntilCopyConfirmed: with a replica required (GATEWAY_DURABLE_REPLICAS=1)
// and none there, the relay copies a user's outbox into the tenant's stream but cannot confirm
// the copy: it fails (unavailable) and the entries stay in the outbox, so a failover that loses
// the unconfirmed copy loses no event (in a cluster the outbox's node keeps them). Once the copy
// can be confirmed (here: durability off), the next relay skips what its checkpoint names,
// copies nothing twice, and empties the outbox.
func TestRelayKeepsOutboxUntilCopyConfirmed(t *testing.T) {
	t.Parallel()
	srv := testredis.StartServer(t)
	open := func(replicas int) *store.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := store.Open(ctx, store.Options{URL: srv.URL(), Timeout: time.Second,
			Durability: &store.Durability{Replicas: replicas, Timeout: 200 * time.Millisecond, NoAOF: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	prefix := testredis.Prefix(t)
	strict := newStore(t, open(1), prefix)
	const user, tenant = "uConfirm", "acme"
	appendOutbox(t, strict, user, tenant, 0, 3)
	ctx := context.Background()
	outboxLen := func(es *Store) int64 {
		n, err := es.client.Do(ctx, es.client.B().Xlen().Key(es.keys.EventOutbox(user)).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := strict.RelayOutbox(ctx, user); !errors.Is(err, store.ErrNotDurable) {
		t.Fatalf("relay without the replica it requires: %v, want ErrNotDurable", err)
	}
	if n := outboxLen(strict); n != 3 {
		t.Fatalf("the outbox holds %d entries after an unconfirmed copy, want 3 (deleted before a replica had the copy)", n)
	}
	off := newStore(t, open(0), prefix)
	off.hasher = strict.hasher // the same tenant tag
	n, err := off.RelayOutbox(ctx, user)
	if err != nil || n != 0 {
		t.Fatalf("confirmed relay: %d copied (%v), want 0: the unconfirmed copy is there", n, err)
	}
	if n := outboxLen(off); n != 0 {
		t.Fatalf("the outbox holds %d entries after a confirmed relay, want 0", n)
	}
	wantSequence(t, subjects(t, off, tenant), user, 3)
}
