package webhookstore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// TestDeliveryWaitsForConfirmedEvents: an event the primary holds and its replica does not
// (written with a write whose confirmation failed: a 503 a failover may undo) is not delivered
// while the replica cannot confirm it (GATEWAY_DURABLE_READS=all, the default); once the
// replica holds it, it is.
func TestDeliveryWaitsForConfirmedEvents(t *testing.T) {
	t.Parallel()
	primary, replica := testredis.StartPrimaryWithReplica(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: time.Second,
		Durability: &store.Durability{Replicas: store.DurableAuto, Timeout: 300 * time.Millisecond, NoAOF: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	f := newFixture(t, s, testredis.Prefix(t))
	f.deliverer(f.st, "g1", webhooks.DeliverOptions{})
	f.emit("session.revoked", "s_1")
	eventually(t, 10*time.Second, "the first event delivered", func() bool { return f.rcv.distinct() >= 1 })

	replica.Pause()
	defer replica.Resume()
	f.emit("session.revoked", "s_2")
	time.Sleep(time.Second) // twenty polls
	if n := f.rcv.distinct(); n != 1 {
		t.Fatalf("%d events delivered with the replica frozen, want 1: the second is on the primary only", n)
	}
	replica.Resume()
	eventually(t, 10*time.Second, "the second event delivered once the replica holds it", func() bool { return f.rcv.distinct() >= 2 })
}
