package eventstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestRangeShowsOnlyConfirmedEvents: an event the primary holds but its replica does not (the
// event of a write whose confirmation failed: a 503 a failover may undo) is not shown by a
// confirmed range (GATEWAY_DURABLE_READS=all, the default), which answers unavailable while
// the replica cannot confirm; unconfirmed (off) it is shown at once. Once the replica holds it,
// the confirmed range shows it; an empty range needs no replica.
func TestRangeShowsOnlyConfirmedEvents(t *testing.T) {
	t.Parallel()
	primary, replica := testredis.StartPrimaryWithReplica(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(unconfirmed bool) *store.Store {
		s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: time.Second,
			Durability: &store.Durability{Replicas: store.DurableAuto, Timeout: 300 * time.Millisecond, NoAOF: true, UnconfirmedReads: unconfirmed}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	prefix := testredis.Prefix(t)
	confirmed, unconfirmed := newStore(t, open(false), prefix), newStore(t, open(true), prefix)
	unconfirmed.hasher = confirmed.hasher // one deployment: the same tenant tags
	const tenant = "acme"
	if evs, _, err := confirmed.Range(ctx, tenant, "", 10); err != nil || len(evs) != 0 {
		t.Fatalf("range of an empty stream: %v, %v", evs, err)
	}

	replica.Pause()
	key := confirmed.stream(tenant)
	err := confirmed.client.Do(ctx, confirmed.client.B().Xadd().Key(key).Id("*").FieldValue().
		FieldValue(events.FieldType, "quote.created").FieldValue(events.FieldTime, "1").
		FieldValue(events.FieldTenant, tenant).FieldValue(events.FieldSubject, "q_1").Build()).Error()
	if err == nil {
		err = confirmed.client.Do(ctx, confirmed.client.B().Pexpire().Key(key).Milliseconds(60_000).Build()).Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if evs, _, err := unconfirmed.Range(ctx, tenant, "", 10); err != nil || len(evs) != 1 {
		t.Fatalf("unconfirmed range with the replica frozen: %v, %v; want the event the primary holds", evs, err)
	}
	if evs, _, err := confirmed.Range(ctx, tenant, "", 10); !errors.Is(err, storeerr.ErrUnavailable) {
		t.Fatalf("confirmed range with the replica frozen: %v, %v; want unavailable (503)", evs, err)
	}
	replica.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, _, err := confirmed.Range(ctx, tenant, "", 10)
		if err == nil && len(evs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed range after the replica woke: %v, %v", evs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
