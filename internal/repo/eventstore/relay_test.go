package eventstore

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newStore(t testing.TB, s *store.Store, prefix string) *Store {
	t.Helper()
	if err := s.LoadScripts(context.Background(), repo.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	es, err := New(s, Options{Prefix: prefix, Hasher: h, Retention: events.Retention{MaxAge: time.Hour, MaxLen: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// appendOutbox appends n events to userTag's outbox as the session scripts do (the same
// fields), numbered from first in their subject.
func appendOutbox(t testing.TB, es *Store, userTag, tenant string, first, n int) {
	t.Helper()
	ctx := context.Background()
	key := es.keys.EventOutbox(userTag)
	for i := first; i < first+n; i++ {
		// With its TTL in the same MULTI, as the session scripts set it in the same step.
		for _, r := range es.client.DoMulti(ctx, es.client.B().Multi().Build(),
			es.client.B().Xadd().Key(key).Id("*").FieldValue().
				FieldValue(events.FieldType, string(events.SessionRotated)).FieldValue(events.FieldTime, strconv.FormatInt(time.Now().UnixMilli(), 10)).
				FieldValue(events.FieldTenant, tenant).FieldValue(events.FieldSubject, fmt.Sprintf("s_%s_%06d", userTag, i)).
				FieldValue(events.FieldActor, "system").FieldValue(events.FieldData, "{}").Build(),
			es.client.B().Pexpire().Key(key).Milliseconds(time.Hour.Milliseconds()).Build(),
			es.client.B().Exec().Build()) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// subjects are the tenant stream's subjects in order.
func subjects(t *testing.T, es *Store, tenant string) []string {
	t.Helper()
	evs, _, err := es.Range(context.Background(), tenant, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Subject
	}
	return out
}

func wantSequence(t *testing.T, got []string, userTag string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("tenant stream holds %d events, want %d: %v", len(got), n, got)
	}
	for i, s := range got {
		if want := fmt.Sprintf("s_%s_%06d", userTag, i); s != want {
			t.Fatalf("event %d is %s, want %s (lost, duplicated or reordered)", i, s, want)
		}
	}
}

// TestRelayExactlyOnceWhenKilledMidRelay: a gateway that copied an outbox into the tenant's
// stream and died before deleting the copied entries (relay.lua ran, outbox_ack.lua did not)
// leaves them in the outbox; the next relay, on any gateway, copies each event once, in order,
// and empties (deletes) the outbox. Without the checkpoint the second relay duplicated every
// event of the first batch; with the outbox deleted at once when emptied, events appended in the
// same millisecond got smaller ids than the checkpoint and were skipped (3 of 158 lost).
func TestRelayExactlyOnceWhenKilledMidRelay(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		es := newStore(t, s, prefix)
		const user = "userTagAAAA1"
		appendOutbox(t, es, user, "acme", 0, 5)
		// The dead gateway's relay: the copy alone.
		copyOnly(t, es, user, "acme")
		appendOutbox(t, es, user, "acme", 5, 3)
		n, err := es.RelayOutbox(ctx, user)
		if err != nil || n != 3 {
			t.Fatalf("relay after the crash copied %d, %v; want the 3 new events", n, err)
		}
		wantSequence(t, subjects(t, es, "acme"), user, 8)
		time.Sleep(2 * time.Millisecond) // (an outbox is deleted once its last id's millisecond passed)
		if _, err := es.RelayOutbox(ctx, user); err != nil {
			t.Fatal(err)
		}
		if k, _ := es.client.Do(ctx, es.client.B().Exists().Key(es.keys.EventOutbox(user)).Build()).AsInt64(); k != 0 {
			t.Fatal("the emptied outbox was kept")
		}
		// Two relays racing over the same entries: each event still once.
		appendOutbox(t, es, user, "acme", 8, 150)
		errs := make(chan error, 2)
		for range 2 {
			go func() { _, err := es.RelayOutbox(ctx, user); errs <- err }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		wantSequence(t, subjects(t, es, "acme"), user, 158)
		// The checkpoint and the stream have their TTLs.
		tag := es.hasher.TenantTag("acme")
		for _, k := range []string{es.keys.EventStream(tag), es.keys.EventRelayed(tag, user)} {
			if p, _ := es.client.Do(ctx, es.client.B().Pttl().Key(k).Build()).AsInt64(); p <= 0 {
				t.Fatalf("%s has no TTL (%d)", k, p)
			}
		}
	})
}

// copyOnly runs relay.lua over the whole outbox without deleting anything (a gateway killed
// between the copy and the delete).
func copyOnly(t *testing.T, es *Store, user, tenant string) {
	t.Helper()
	ctx := context.Background()
	entries, err := es.client.Do(ctx, es.client.B().Xrange().Key(es.keys.EventOutbox(user)).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{events.Envelope(ctx, tenant, es.retention), "60000"}
	for _, e := range entries {
		args = append(args, e.ID, strconv.Itoa(2*len(e.FieldValues)))
		for k, v := range e.FieldValues {
			args = append(args, k, v)
		}
	}
	tag := es.hasher.TenantTag(tenant)
	if _, err := repo.RunScript(ctx, es.client, nil, "events_relay", "events relay", scriptRelay, []string{es.keys.EventStream(tag), es.keys.EventRelayed(tag, user)}, args); err != nil {
		t.Fatal(err)
	}
}

// TestRelaySweepFindsLeftOutboxes: outboxes no gateway was told about (their gateway died
// before its relay ran) are found by the sweep on every node and relayed.
func TestRelaySweepFindsLeftOutboxes(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		es := newStore(t, s, prefix)
		users := []string{"userTagBBBB1", "userTagBBBB2", "userTagBBBB3", "userTagBBBB4"}
		for _, u := range users {
			appendOutbox(t, es, u, "acme", 0, 2)
		}
		if err := NewRelay(es, time.Hour).Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := subjects(t, es, "acme"); len(got) != 2*len(users) {
			t.Fatalf("after the sweep the tenant stream holds %d events, want %d", len(got), 2*len(users))
		}
	})
}
