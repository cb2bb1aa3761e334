package eventstore

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newStore(t testing.TB, s *store.Store, prefix string) *Store {
	t.Helper()
	return newStoreWith(t, s, prefix, false)
}

// newStoreWith is newStore with the users' events in their session hashes (inHash: the per-user
// layout) or in outbox streams.
func newStoreWith(t testing.TB, s *store.Store, prefix string, inHash bool) *Store {
	t.Helper()
	if err := s.LoadScripts(context.Background(), repo.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Prefix: prefix, Hasher: h, Retention: events.Retention{MaxAge: time.Hour, MaxLen: 1000}}
	if inHash {
		o.SessionHash = func(tag string) string { return repo.Keys{Prefix: prefix}.Key("sess", tag) }
	}
	es, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// appendOutbox appends n events to userTag's pending events as the session scripts do (the same
// fields, in the same step as their TTL), numbered from first in their subject: to the outbox
// stream, or through the kit's snippet event_outbox into the user's hash.
func appendOutbox(t testing.TB, es *Store, userTag, tenant string, first, n int) {
	t.Helper()
	appendOutboxType(t, es, userTag, tenant, events.SessionRotated, first, n)
}

// appendOutboxType is appendOutbox with events of type typ.
func appendOutboxType(t testing.TB, es *Store, userTag, tenant string, typ events.Type, first, n int) {
	t.Helper()
	ctx := context.Background()
	if h, ok := es.outbox.(outboxHash); ok {
		args := []string{events.Envelope(ctx, tenant, es.retention), string(typ)}
		for i := first; i < first+n; i++ {
			args = append(args, fmt.Sprintf("s_%s_%06d", userTag, i))
		}
		if _, err := repo.RunScript(ctx, es.client, nil, "test_outbox_append", "test outbox append", scriptTestAppend, []string{h.key(userTag)}, args); err != nil {
			t.Fatal(err)
		}
		return
	}
	key := es.keys.EventOutbox(userTag)
	for i := first; i < first+n; i++ {
		// With its TTL in the same MULTI, as the session scripts set it in the same step.
		for _, r := range es.client.DoMulti(ctx, es.client.B().Multi().Build(),
			es.client.B().Xadd().Key(key).Id("*").FieldValue().
				FieldValue(events.FieldType, string(typ)).FieldValue(events.FieldTime, strconv.FormatInt(time.Now().UnixMilli(), 10)).
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

// scriptTestAppend appends events to a user's hash with the kit's snippet event_outbox, as the
// session scripts of the per-user layout do (session_event_hash.lua in sessionstore).
// KEYS[1]: the user's hash; ARGV[1]: the envelope, ARGV[2]: the type, ARGV[3..]: subjects.
var scriptTestAppend = repo.LoadScript(fstest.MapFS{"test_outbox_append.lua": {Data: []byte(`
--#include event_append
--#include event_outbox
local env = event_env(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 3, #ARGV do
  event_outbox_append(KEYS[1], env, now, ARGV[2], ARGV[i], {})
end
return {'OK'}
`)}}, "test_outbox_append")

// eachOutbox runs fn on every backend with the users' events in outbox streams (the per-session
// layout) and, where the server has hash field expiry, in their session hashes (per user).
func eachOutbox(t *testing.T, fn func(t *testing.T, es *Store)) {
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		for _, inHash := range []bool{false, true} {
			if inHash && (s.Caps.FieldExpiry == store.FieldExpiryFallback || !s.Caps.FieldExpiryMs) {
				continue
			}
			t.Run(map[bool]string{false: "stream", true: "hash"}[inHash], func(t *testing.T) {
				fn(t, newStoreWith(t, s, prefix+map[bool]string{false: "s", true: "h"}[inHash], inHash))
			})
		}
	})
}

// eachHashOutbox runs fn on every backend whose store keeps the users' events in their session
// hashes (the per-user layout's outbox).
func eachHashOutbox(t *testing.T, fn func(t *testing.T, es *Store, h outboxHash)) {
	eachOutbox(t, func(t *testing.T, es *Store) {
		if h, ok := es.outbox.(outboxHash); ok {
			fn(t, es, h)
		}
	})
}

// eventFieldName is the name of a session event's field in the user's hash.
var eventFieldName = regexp.MustCompile(`^ev\.[0-9]+$`)

// outboxLeft is whether anything of userTag's pending events is left in Redis: the outbox
// stream, or an event field in the user's hash.
func outboxLeft(t *testing.T, es *Store, userTag string) bool {
	t.Helper()
	if h, ok := es.outbox.(outboxHash); ok {
		names, err := es.client.Do(context.Background(), es.client.B().Hkeys().Key(h.key(userTag)).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(names, eventFieldName.MatchString)
	}
	n, err := es.client.Do(context.Background(), es.client.B().Exists().Key(es.keys.EventOutbox(userTag)).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
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

// TestRelayExactlyOnceWhenKilledMidRelay: a gateway that copied a user's pending events into
// the tenant's stream and died before deleting them (relay.lua ran, the ack did not) leaves
// them pending; the next relay, on any gateway, copies each event once, in order, and empties
// (deletes) the outbox — the outbox stream of the per-session layout, and the user's hash of
// the per-user layout. Without the checkpoint the second relay duplicated every event of the
// first batch; with the outbox stream deleted at once when emptied, events appended in the
// same millisecond got smaller ids than the checkpoint and were skipped (3 of 158 lost).
func TestRelayExactlyOnceWhenKilledMidRelay(t *testing.T) {
	t.Parallel()
	eachOutbox(t, func(t *testing.T, es *Store) {
		ctx := context.Background()
		const user = "userTagAAAA1"
		appendOutbox(t, es, user, "acme", 0, 5)
		// The dead gateway's relay: the copy alone.
		copyOnly(t, es, user)
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
		if outboxLeft(t, es, user) {
			t.Fatal("the emptied outbox was kept")
		}
		// Two relays racing over the same events: each event still once.
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
		checkpointTTLs(t, es, "acme", user)
		// The outbox made anew after its deletion numbers its events past the checkpoint.
		time.Sleep(2 * time.Millisecond)
		if _, err := es.RelayOutbox(ctx, user); err != nil || outboxLeft(t, es, user) {
			t.Fatalf("the emptied outbox was kept (%v)", err)
		}
		appendOutbox(t, es, user, "acme", 158, 2)
		if n, err := es.RelayOutbox(ctx, user); err != nil || n != 2 {
			t.Fatalf("relay of a new outbox copied %d, %v; want 2", n, err)
		}
		wantSequence(t, subjects(t, es, "acme"), user, 160)
	})
}

// checkpointTTLs checks that the tenant's stream and the user's checkpoint have their TTLs:
// the checkpoint key's, or the checkpoints hash's and the user's field's.
func checkpointTTLs(t *testing.T, es *Store, tenant, user string) {
	t.Helper()
	ctx := context.Background()
	tag := es.hasher.TenantTag(tenant)
	keys := []string{es.keys.EventStream(tag), es.keys.EventRelayed(tag, user)}
	if es.checkpointHash {
		keys[1] = es.keys.EventRelayedHash(tag)
		ttl, err := es.client.Do(ctx, es.client.B().Hpttl().Key(keys[1]).Fields().Numfields(1).Field(user).Build()).AsIntSlice()
		if err != nil || len(ttl) != 1 || ttl[0] <= 0 {
			t.Fatalf("the checkpoint of %s in %s has no field TTL (%v, %v)", user, keys[1], ttl, err)
		}
	}
	for _, k := range keys {
		if p, _ := es.client.Do(ctx, es.client.B().Pttl().Key(k).Build()).AsInt64(); p <= 0 {
			t.Fatalf("%s has no TTL (%d)", k, p)
		}
	}
}

// copyOnly reads the user's pending events and runs relay.lua over them without deleting
// anything (a gateway killed between the copy and the delete).
func copyOnly(t *testing.T, es *Store, user string) {
	t.Helper()
	ctx := context.Background()
	b, err := readOne(ctx, es, user)
	if err != nil || len(b.entries) == 0 {
		t.Fatalf("read %d events, %v", len(b.entries), err)
	}
	if _, errs := es.copyUsers(ctx, []string{user}, []batch{b}); errs[0] != nil {
		t.Fatal(errs[0])
	}
}

// readOne is the outbox's read of one user's pending events.
func readOne(ctx context.Context, es *Store, user string) (batch, error) {
	bs, errs := es.outbox.read(ctx, []string{user})
	return bs[0], errs[0]
}

// TestRelayEmptiesTheUserHash (per-user layout): once its events are copied, a user's hash
// holds what it held without them but the last number (evSeq) — no event field — and a hash
// left with no session field (its last session ended while its events waited) is deleted; one
// whose sessions idled away keeps its TTL. The bound: at most repo.EventOutboxMax pending, the
// newest kept.
func TestRelayEmptiesTheUserHash(t *testing.T) {
	t.Parallel()
	eachHashOutbox(t, func(t *testing.T, es *Store, h outboxHash) {
		ctx := context.Background()
		const user, gone, idle = "userTagCCCC1", "userTagCCCC2", "userTagCCCC3"
		key := h.key(user)
		if err := es.client.Do(ctx, es.client.B().Hset().Key(key).FieldValue().FieldValue("userId", "u").FieldValue("AAAAAAAAAAAAAAAAAA:live", "1.x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		// A session's field carries a field TTL, as every script that writes one gives it (the
		// keyspace audit checks it on the keys the tests leave).
		if err := es.client.Do(ctx, es.client.B().Hpexpire().Key(key).Milliseconds(600_000).Fields().Numfields(1).Field("AAAAAAAAAAAAAAAAAA:live").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		appendOutbox(t, es, user, "acme", 0, 3)
		appendOutboxType(t, es, user, "acme", events.SessionRevoked, 3, 1) // (another session of the user)
		appendOutbox(t, es, gone, "acme", 0, 2)
		appendOutboxType(t, es, gone, "acme", events.SessionLoggedOut, 2, 1)
		appendOutbox(t, es, idle, "acme", 0, 3)
		time.Sleep(2 * time.Millisecond) // (a hash is deleted once its last number's millisecond passed)
		for _, u := range []string{user, gone, idle} {
			if n, err := es.RelayOutbox(ctx, u); err != nil || n < 3 {
				t.Fatalf("relayed %d, %v", n, err)
			}
		}
		names, err := es.client.Do(ctx, es.client.B().Hkeys().Key(key).Build()).AsStrSlice()
		if slices.Sort(names); err != nil || !slices.Equal(names, []string{"AAAAAAAAAAAAAAAAAA:live", "evSeq", "userId"}) {
			t.Fatalf("the user's hash after the relay holds %v (%v)", names, err)
		}
		if n, _ := es.client.Do(ctx, es.client.B().Exists().Key(h.key(gone)).Build()).AsInt64(); n != 0 {
			t.Fatal("a hash with no session left was kept after its events were copied")
		}
		if outboxLeft(t, es, idle) {
			t.Fatal("events were left in the hash whose sessions idled away")
		}
		for _, k := range []string{key, h.key(idle)} {
			if p, _ := es.client.Do(ctx, es.client.B().Pttl().Key(k).Build()).AsInt64(); p <= 0 {
				t.Fatalf("%s has no TTL after the relay (%d)", k, p)
			}
		}
		// The bound: at most repo.EventOutboxMax pending, the oldest dropped, the newest kept.
		appendOutbox(t, es, user, "acme", 4, repo.EventOutboxMax+100)
		all := map[string]bool{}
		for {
			b, err := readOne(ctx, es, user)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range b.entries {
				all[e.FieldValues[events.FieldSubject]] = true
			}
			if es.outbox.ack(ctx, []string{user}, []batch{b})[0] != nil || !b.more {
				break
			}
		}
		last := fmt.Sprintf("s_%s_%06d", user, 4+repo.EventOutboxMax+99)
		if len(all) > repo.EventOutboxMax || len(all) < repo.EventOutboxMax-50 || !all[last] {
			t.Fatalf("%d events pending after %d appends (the newest there: %v), want at most %d", len(all), repo.EventOutboxMax+100, all[last], repo.EventOutboxMax)
		}
	})
}

// TestRelaySweepFindsLeftOutboxes: outboxes no gateway was told about (their gateway died
// before its relay ran) are found by the sweep on every node and relayed, by a full pass and
// by the bounded steps of the background loop.
func TestRelaySweepFindsLeftOutboxes(t *testing.T) {
	t.Parallel()
	eachOutbox(t, func(t *testing.T, es *Store) {
		ctx := context.Background()
		users := []string{"userTagBBBB1", "userTagBBBB2", "userTagBBBB3", "userTagBBBB4"}
		for _, u := range users {
			appendOutbox(t, es, u, "acme", 0, 2)
		}
		if err := NewRelay(es, time.Hour).Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if got := subjects(t, es, "acme"); len(got) != 2*len(users) {
			t.Fatalf("after the sweep the tenant stream holds %d events, want %d", len(got), 2*len(users))
		}
		for _, u := range users {
			appendOutbox(t, es, u, "globex", 0, 1)
		}
		r := NewRelay(es, time.Hour)
		for range 1000 { // steps of one SCAN each, until a pass ends on every node
			if err := r.step(ctx, 1); err != nil {
				t.Fatal(err)
			}
			if len(subjects(t, es, "globex")) == len(users) {
				return
			}
		}
		t.Fatalf("the sweep's steps relayed %d of %d", len(subjects(t, es, "globex")), len(users))
	})
}

// TestRelayKeepsAHashNumberedAhead (per-user layout): the ack that may delete a user's hash left
// without a session keeps it while its last number is not below now × 1000 (events appended
// within the millisecond of a relay): a hash made anew numbers its events from now × 1000, and
// numbers at or below the relay's checkpoint would be skipped, lost. Once the clock passed it,
// the next such ack deletes the hash. The ack also creates nothing on a hash deleted meanwhile.
func TestRelayKeepsAHashNumberedAhead(t *testing.T) {
	t.Parallel()
	eachHashOutbox(t, func(t *testing.T, es *Store, h outboxHash) {
		ctx := context.Background()
		const user = "userTagDDDD1"
		key := h.key(user)
		appendOutboxType(t, es, user, "acme", events.SessionLoggedOut, 0, 1)
		b, err := readOne(ctx, es, user)
		if err != nil || len(b.entries) != 1 || !b.ended() {
			t.Fatalf("read %+v, %v", b, err)
		}
		ahead := (time.Now().UnixMilli() + 300) * 1000 // evSeq 300 ms ahead of the clock
		if err := es.client.Do(ctx, es.client.B().Hset().Key(key).FieldValue().FieldValue("evSeq", strconv.FormatInt(ahead, 10)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := es.outbox.ack(ctx, []string{user}, []batch{b})[0]; err != nil {
			t.Fatal(err)
		}
		if n, _ := es.client.Do(ctx, es.client.B().Exists().Key(key).Build()).AsInt64(); n != 1 {
			t.Fatal("the hash was deleted while its last number was ahead of the clock")
		}
		time.Sleep(350 * time.Millisecond)
		if err := es.outbox.ack(ctx, []string{user}, []batch{b})[0]; err != nil {
			t.Fatal(err)
		}
		if n, _ := es.client.Do(ctx, es.client.B().Exists().Key(key).Build()).AsInt64(); n != 0 {
			t.Fatal("the hash left with no session nor event was kept once the clock passed its number")
		}
		b.entries = b.entries[:0] // a plain HDEL, late: nothing made
		if err := es.outbox.ack(ctx, []string{user}, []batch{b})[0]; err != nil {
			t.Fatal(err)
		}
		if n, _ := es.client.Do(ctx, es.client.B().Exists().Key(key).Build()).AsInt64(); n != 0 {
			t.Fatal("a late ack made the deleted hash again")
		}
	})
}
