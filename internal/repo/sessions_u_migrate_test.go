package repo

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Sessions a per-session gateway wrote (LayoutPerSession: one hash per session and the user's
// device index) are moved into the user's hash by a per-user gateway on first touch
// (session_migrate.lua). These tests write them with a per-session repository on a real Redis 8
// backend and open a per-user repository on the same keys.

// migEnvs are a per-session repository (the old gateway) and a per-user one on the same keys;
// the test is skipped on servers without hash field expiry (no per-user layout there).
func migEnvs(t *testing.T, s *store.Store, prefix string) (old, e *sessEnv) {
	t.Helper()
	old = newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout = LayoutPerSession })
	e = newSessEnv(t, s, prefix, nil)
	if old.r.perUser {
		t.Fatal("LayoutPerSession repository keeps sessions per user")
	}
	if !e.r.perUser {
		t.Skipf("%s: no hash field expiry in ms, so no per-user layout to migrate to", s.Caps.FieldExpiry)
	}
	return old, e
}

// legacySnap is what a per-session hash held before the migration.
type legacySnap struct {
	fields map[string]string
	pttl   int64
	// challenge is the challenge fields' own remaining TTL (ms), 0 without a challenge.
	challenge int64
}

func (e *sessEnv) legacySnap(ref session.Ref) legacySnap {
	e.t.Helper()
	key := e.r.sessionKey(ref)
	m, err := e.do(e.s.Client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		e.t.Fatal(err)
	}
	snap := legacySnap{fields: m, pttl: e.pttl(key)}
	if _, ok := m[sfChallengeID]; ok {
		snap.challenge = e.fieldTTLs(key, sfChallengeID)[0]
	}
	return snap
}

// fieldTTLs is HPTTL of fields of key (-2 absent, -1 no TTL).
func (e *sessEnv) fieldTTLs(key string, fields ...string) []int64 {
	e.t.Helper()
	v, err := e.do(e.s.Client.B().Arbitrary("HPTTL").Keys(key).
		Args(append([]string{"FIELDS", strconv.Itoa(len(fields))}, fields...)...).Build()).AsIntSlice()
	if err != nil || len(v) != len(fields) {
		e.t.Fatalf("HPTTL %v: %v %v", fields, v, err)
	}
	return v
}

// checkMigrated fails unless ref's session in the user's hash holds exactly the legacy hash's
// session fields (the user's fields, tokenHash and names no layout knows dropped; createdAtMs
// kept explicitly), each with the legacy key's TTL, and the challenge fields with their own.
func (e *sessEnv) checkMigrated(ref session.Ref, was legacySnap) {
	e.t.Helper()
	want := map[string]string{}
	for _, n := range sessPartFields {
		if v, ok := was.fields[n]; ok {
			want[n] = v
		}
	}
	got := e.sessStored(ref)
	if !maps.Equal(got, want) {
		e.t.Fatalf("session %s in the user's hash:\n got %v\nwant %v\n(legacy hash %v)", ref.Part, got, want, was.fields)
	}
	if got[sfCreatedAt] == "" {
		e.t.Fatalf("createdAtMs not kept explicitly: %v", got)
	}
	names := slices.Sorted(maps.Keys(got))
	ttls := e.fieldTTLs(e.r.userKey(ref.Tag), partFields(ref.Part, names)...)
	const slack = 5000 // the test's own commands between the snapshot and the check
	for i, n := range names {
		want := was.pttl
		if n == sfChallengeID || n == sfCodeMAC {
			want = was.challenge
		}
		if ttls[i] > want || ttls[i] < want-slack {
			e.t.Fatalf("field %s: TTL %d ms, want the legacy %d ms (challenge %d ms, key %d ms)", n, ttls[i], want, was.challenge, was.pttl)
		}
	}
}

// noLegacyKeys fails unless the user's legacy keys (index, per-session hashes) are gone.
func (e *sessEnv) noLegacyKeys(tag string, refs ...session.Ref) {
	e.t.Helper()
	keys := []string{e.r.devicesKey(tag)}
	for _, ref := range refs {
		keys = append(keys, e.r.sessionKey(ref))
	}
	for _, k := range keys {
		if p := e.pttl(k); p != -2 {
			e.t.Fatalf("legacy key %s left after the migration (pttl %d)", k, p)
		}
	}
}

func (e *sessEnv) scriptCalls(name string) int {
	n := 0
	for _, c := range e.count.Commands() {
		if c.Name() == "EVALSHA" || c.Name() == "EVAL" {
			if len(c.Args) > 1 && (c.Args[1] == scriptSHA(name) || strings.Contains(c.Args[1], name+".lua")) {
				n++
			}
		}
	}
	return n
}

func scriptSHA(name string) string {
	b, _ := scriptFS.ReadFile("scripts/" + name + ".lua")
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// Every live legacy session of a user moves into the user's hash in ONE script call: its
// fields as "<idPart>:<name>" (tokenHash and unknown names dropped, createdAtMs explicit),
// every field with the legacy key's TTL, the challenge fields with their own shorter one; the
// key outlives the latest absolute deadline; the index and the legacy hashes are gone; a
// member whose hash is gone is dropped. A second run changes nothing.
func TestSessionMigrateMovesLegacySessions(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		old, e := migEnvs(t, s, prefix)
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		c := old.create(tag, "acme", "ann", 30*time.Minute, 5*time.Hour)
		cid := sessRand(t, 16)
		old.challenge(c, "acme", cid, "mac-c", time.Minute)
		if res, _, err := old.verify(c, "acme", cid, "wrong"); err != nil || res.Outcome != VerifyWrongCode {
			t.Fatalf("wrong code: %+v %v", res, err)
		}
		d := old.create(tag, "acme", "ann", 10*time.Minute, 3*time.Hour)
		if err := old.do(s.Client.B().Hset().Key(old.r.sessionKey(d)).FieldValue().FieldValue("tokenHash", "x").
			FieldValue("favouriteColour", "blue").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		gone := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		if err := old.do(s.Client.B().Del().Key(old.r.sessionKey(gone)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		snaps := map[session.Ref]legacySnap{a: old.legacySnap(a), c: old.legacySnap(c), d: old.legacySnap(d)}
		if snaps[c].challenge <= 0 || snaps[c].challenge > 60_000 {
			t.Fatalf("legacy challenge TTL %d", snaps[c].challenge)
		}

		e.count.Reset()
		if err := e.r.migrate(ctx, e.r.client, tag); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if n := e.scriptCalls("session_migrate"); n != 1 {
			t.Fatalf("%d session_migrate calls for a user with 4 legacy sessions, want 1 (%v)", n, e.count.Names())
		}
		for ref, was := range snaps {
			e.checkMigrated(ref, was)
		}
		if st := e.sessStored(gone); len(st) != 0 {
			t.Fatalf("a session whose hash was gone came back: %v", st)
		}
		e.noLegacyKeys(tag, a, c, d, gone)
		keys := slices.DeleteFunc(e.keys(), func(k string) bool { return strings.Contains(k, ":v1:rl:") }) // the MFA counter stays
		if len(keys) != 1 || keys[0] != e.r.userKey(tag) {
			t.Fatalf("keys after the migration %v, want the user's hash alone", keys)
		}
		user, err := e.do(s.Client.B().Hmget().Key(e.r.userKey(tag)).Field(sessUserFields...).Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		wantUser := []string{"ann", "acme", strconv.Itoa(SchemaVersion)}
		for i, v := range user {
			got, err := v.ToString()
			if err != nil || i < 3 && got != wantUser[i] {
				t.Fatalf("user field %s = %q %v", sessUserFields[i], got, err)
			}
		}
		if ttl := e.fieldTTLs(e.r.userKey(tag), sessUserFields...); slices.ContainsFunc(ttl, func(p int64) bool { return p != -1 }) {
			t.Fatalf("user fields' TTLs %v, want none", ttl)
		}
		if p := e.pttl(e.r.userKey(tag)); p > (5*time.Hour).Milliseconds() || p < (5*time.Hour).Milliseconds()-10_000 {
			t.Fatalf("key TTL %d ms, want the latest absolute deadline (5h)", p)
		}
		e.everyKeyHasTTL()

		// Again (another gateway that read the index before): nothing changes.
		before, err := e.do(s.Client.B().Hgetall().Key(e.r.userKey(tag)).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		keys = []string{e.r.userKey(tag), e.r.devicesKey(tag), e.r.sessionKey(a), e.r.sessionKey(c)}
		rep, err := e.r.runOn(ctx, e.r.client, "session_migrate", scriptSessionMigrate, keys,
			[]string{strconv.Itoa(SchemaVersion), a.Part, c.Part})
		if err != nil || rep.Code() != CodeOK {
			t.Fatalf("second migration: %v %v", rep, err)
		}
		after, err := e.do(s.Client.B().Hgetall().Key(e.r.userKey(tag)).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(before, after) {
			t.Fatalf("a second migration changed the hash:\n%v\n%v", before, after)
		}
	})
}

// Corrupt legacy sessions (another user's fields, no createdAtMs, an unknown schema) are not
// moved: none of them becomes a session of the user, nor makes the others corrupt (they come
// first in the index here: their absolute deadline is sooner), and the others move.
func TestSessionMigrateDropsCorrupt(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		old, e := migEnvs(t, s, prefix)
		ctx := context.Background()
		tag := sessRand(t, 9)
		good := old.create(tag, "acme", "ann", time.Hour, 3*time.Hour)
		bad := map[string][]string{"userId": {"userId", "bob"}, "tenantId": {"tenantId", "globex"},
			"schema": {"schemaVersion", "9"}}
		var refs []session.Ref
		for _, kv := range bad {
			ref := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
			old.sessSet(ref, kv[0], kv[1])
			refs = append(refs, ref)
		}
		noCreated := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		if err := old.do(s.Client.B().Hdel().Key(old.r.sessionKey(noCreated)).Field(sfCreatedAt).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, noCreated)
		// The schema before (readable, OldSchema) moves: the hash's schema is the current one,
		// and the session reads the same under it (schema 1 differs only in never holding
		// idleTimeoutMs, whose absence means ImplicitIdle under either).
		older := old.create(tag, "acme", "ann", ImplicitIdle, 3*time.Hour)
		old.sessSet(older, sfSchemaVersion, strconv.Itoa(SchemaVersion-1))
		was, wasOlder := old.legacySnap(good), old.legacySnap(older)
		if err := e.r.migrate(ctx, e.r.client, tag); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		e.checkMigrated(good, was)
		e.checkMigrated(older, wasOlder)
		if v := e.hget(e.r.userKey(tag), sfSchemaVersion); v != strconv.Itoa(SchemaVersion) {
			t.Fatalf("user's schemaVersion %q", v)
		}
		for _, ref := range refs {
			if st := e.sessStored(ref); len(st) != 0 {
				t.Fatalf("a corrupt legacy session was moved: %v", st)
			}
		}
		e.noLegacyKeys(tag, append(refs, good, older)...)
		if n := e.metric("hashgate_repo_reads", sessAttr("outcome", string(Corrupt))); n != int64(len(refs)) {
			t.Fatalf("corrupt reads counted %d, want %d", n, len(refs))
		}
	})
}

// A member that joined the index after the caller's read makes the script answer RETRY
// without writing anything; migrate reads again and moves it too. When the index changes
// before every attempt, migrate gives up with a 503-kind error, having written nothing.
func TestSessionMigrateRetryWhenIndexChanged(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		old, e := migEnvs(t, s, prefix)
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		bb := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		read, err := e.r.members(ctx, tag, MaxSessionsPerUser)
		if err != nil || len(read) != 2 {
			t.Fatalf("members %v %v", read, err)
		}
		late := old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
		keys := []string{e.r.userKey(tag), e.r.devicesKey(tag)}
		for _, p := range read {
			keys = append(keys, e.r.sessionKey(session.Ref{Tag: tag, Part: p}))
		}
		rep, err := e.r.runOn(ctx, e.r.client, "session_migrate", scriptSessionMigrate, keys,
			append([]string{strconv.Itoa(SchemaVersion)}, read...))
		if err != nil || rep.Code() != CodeRetry {
			t.Fatalf("stale read: %v %v, want RETRY", rep, err)
		}
		if p := e.pttl(e.r.userKey(tag)); p != -2 {
			t.Fatalf("RETRY wrote the user's hash (pttl %d)", p)
		}
		for _, ref := range []session.Ref{a, bb, late} {
			if p := e.pttl(e.r.sessionKey(ref)); p <= 0 {
				t.Fatalf("RETRY touched a legacy hash (pttl %d)", p)
			}
		}
		if n, _ := e.do(s.Client.B().Zcard().Key(e.r.devicesKey(tag)).Build()).AsInt64(); n != 3 {
			t.Fatalf("RETRY changed the index: %d members", n)
		}
		snaps := map[session.Ref]legacySnap{a: old.legacySnap(a), bb: old.legacySnap(bb), late: old.legacySnap(late)}
		if err := e.r.migrate(ctx, e.r.client, tag); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		for ref, was := range snaps {
			e.checkMigrated(ref, was)
		}
		e.noLegacyKeys(tag, a, bb, late)

		// A per-session gateway adds a session after every read of the index: bounded.
		other := sessRand(t, 9)
		first := old.create(other, "acme", "bob", time.Hour, 2*time.Hour)
		var added []session.Ref
		e.count.After = func(args []string) {
			if strings.EqualFold(args[0], "ZRANGE") {
				added = append(added, old.create(other, "acme", "bob", time.Hour, 2*time.Hour))
			}
		}
		err = e.r.migrate(ctx, e.r.client, other)
		e.count.After = nil
		if !errors.Is(err, apperr.Unavailable) {
			t.Fatalf("migrate under constant change: %v, want unavailable", err)
		}
		if len(added) < 2 || len(added) > 10 {
			t.Fatalf("%d index reads: not bounded", len(added))
		}
		if p := e.pttl(e.r.userKey(other)); p != -2 {
			t.Fatalf("a refused migration wrote the user's hash (pttl %d)", p)
		}
		if err := e.r.migrate(ctx, e.r.client, other); err != nil {
			t.Fatalf("migrate once the index is quiet: %v", err)
		}
		for _, ref := range append(added, first) {
			if e.sessStored(ref)[sfAbsoluteExpires] == "" {
				t.Fatalf("session %s not moved", ref.Part)
			}
		}
		e.noLegacyKeys(other, append(added, first)...)
	})
}

// Gateways migrating the same user at once (directly, and through per-user creates that meet
// the index) leave one consistent hash: every legacy session moved once with its fields and
// TTLs, every new session present, no legacy key left.
func TestSessionMigrateConcurrent(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		old, e := migEnvs(t, s, prefix)
		e2 := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		snaps := map[session.Ref]legacySnap{}
		var refs []session.Ref
		for i := range 6 {
			ref := old.create(tag, "acme", "ann", time.Duration(10+i)*time.Minute, time.Duration(2+i)*time.Hour)
			if i%2 == 0 {
				old.challenge(ref, "acme", sessRand(t, 16), "mac", time.Minute)
			}
			refs = append(refs, ref)
		}
		for _, ref := range refs {
			snaps[ref] = old.legacySnap(ref)
		}
		var wg sync.WaitGroup
		created := make(chan session.Ref, 8)
		for i := range 16 {
			env := []*sessEnv{e, e2}[i%2]
			wg.Go(func() {
				if i%4 == 3 {
					ref := sessRef(t, tag)
					if _, err := env.r.Create(ctx, session.Record{Ref: ref, UserID: "ann", TenantID: "acme",
						Idle: time.Hour, Absolute: 2 * time.Hour}); err != nil {
						t.Errorf("create: %v", err)
						return
					}
					created <- ref
					return
				}
				if err := env.r.migrate(ctx, env.r.client, tag); err != nil {
					t.Errorf("migrate: %v", err)
				}
			})
		}
		wg.Wait()
		close(created)
		if t.Failed() {
			return
		}
		for ref, was := range snaps {
			e.checkMigrated(ref, was)
		}
		n := 0
		for ref := range created {
			if e.sessStored(ref)[sfAbsoluteExpires] == "" {
				t.Fatalf("created session %s missing", ref.Part)
			}
			n++
		}
		all, err := e.do(s.Client.B().Hgetall().Key(e.r.userKey(tag)).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for k := range all {
			if strings.HasSuffix(k, ":"+sfAbsoluteExpires) {
				live++
			}
		}
		if live != len(refs)+n || all[sfUserID] != "ann" || all[sfTenantID] != "acme" {
			t.Fatalf("user's hash holds %d sessions, want %d: %v", live, len(refs)+n, all)
		}
		e.noLegacyKeys(tag, refs...)
		e.everyKeyHasTTL()
	})
}

// Every entry point of a per-user gateway finds a user's legacy sessions: the first touch moves
// them all into the user's hash (the index and the legacy hashes are gone after it), and the
// operation then acts on the moved session.
func TestSessionMigrateOnFirstTouch(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if _, e := migEnvs(t, s, prefix); !e.r.perUser {
			return
		}
		ctx := context.Background()
		// legacy opens both repositories for the subtest t and writes two sessions of a new
		// user with the per-session one; the first has a live challenge (id, MAC "good").
		legacy := func(t *testing.T) (e *sessEnv, tag, cid string, a, c session.Ref) {
			old, e := migEnvs(t, s, prefix)
			tag, cid = sessRand(t, 9), sessRand(t, 16)
			a = old.create(tag, "acme", "ann", time.Hour, 2*time.Hour)
			c = old.create(tag, "acme", "ann", 30*time.Minute, 3*time.Hour)
			old.challenge(a, "acme", cid, "good", time.Minute)
			return e, tag, cid, a, c
		}
		t.Run("authorize", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			ac, err := e.r.Authorize(ctx, a)
			if err != nil || ac.UserID != "ann" || ac.Status != session.MFARequired {
				t.Fatalf("authorize a legacy session: %+v %v", ac, err)
			}
			e.noLegacyKeys(tag, a, c)
			if ac, err := e.r.Authorize(ctx, c); err != nil || ac.UserID != "ann" {
				t.Fatalf("the other legacy session after the move: %+v %v", ac, err)
			}
		})
		t.Run("get", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			v, err := e.r.Get(ctx, a, "acme")
			if err != nil || !v.ChallengeLive || v.UserID != "ann" {
				t.Fatalf("get a legacy session: %+v %v", v, err)
			}
			e.noLegacyKeys(tag, a, c)
		})
		t.Run("list", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			l, err := e.r.List(ctx, tag, "acme")
			if err != nil || len(l) != 2 {
				t.Fatalf("list of a user with 2 legacy sessions: %+v %v", l, err)
			}
			e.noLegacyKeys(tag, a, c)
		})
		t.Run("revoke-all", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			n, err := e.r.RevokeAll(ctx, tag, "")
			if err != nil || n != 2 {
				t.Fatalf("revoke-all of 2 legacy sessions: %d %v", n, err)
			}
			e.noLegacyKeys(tag, a, c)
			for _, ref := range []session.Ref{a, c} {
				if st := e.sessStored(ref); len(st) != 0 {
					t.Fatalf("a revoked legacy session left fields: %v", st)
				}
			}
		})
		t.Run("revoke", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			if ok, err := e.r.Revoke(ctx, c, "acme"); !ok || err != nil {
				t.Fatalf("revoke a legacy session: %v %v", ok, err)
			}
			e.noLegacyKeys(tag, a, c)
			if len(e.sessStored(c)) != 0 || e.sessStored(a)[sfAbsoluteExpires] == "" {
				t.Fatalf("after the revoke: revoked %v, other %v", e.sessStored(c), e.sessStored(a))
			}
		})
		t.Run("rotate", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			was := e.legacySnap(a)
			next := session.Ref{Tag: tag, Part: sessPart(t)}
			got, err := e.r.Rotate(ctx, a, "acme", next)
			if err != nil || got.Ref != next || got.Status != session.MFARequired ||
				got.AbsoluteExpiresAt.UnixMilli() != sessAtoi(was.fields[sfAbsoluteExpires]) {
				t.Fatalf("rotate a legacy session: %+v %v", got, err)
			}
			e.noLegacyKeys(tag, a, c)
			if st := e.sessStored(a); len(st) != 0 {
				t.Fatalf("old id part left: %v", st)
			}
			st := e.sessStored(next)
			if st[sfChallengeID] != was.fields[sfChallengeID] || st[sfCreatedAt] != was.fields[sfCreatedAt] {
				t.Fatalf("rotated session %v, legacy %v", st, was.fields)
			}
			if ttl := e.fieldTTLs(e.r.userKey(tag), partField(next.Part, sfChallengeID))[0]; ttl <= 0 || ttl > was.challenge {
				t.Fatalf("challenge TTL %d after the move and rotation, %d before", ttl, was.challenge)
			}
			e.sessionFieldsShareTTL(next)
		})
		t.Run("challenge", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			if _, err := e.r.StartChallenge(ctx, MFAChallenge{Ref: c, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
				t.Fatalf("challenge on a legacy session: %v", err)
			}
			e.noLegacyKeys(tag, a, c)
			if !e.challengeLive(c) || !e.challengeLive(a) {
				t.Fatal("challenges not in the user's hash")
			}
			e.sessionFieldsShareTTL(c)
		})
		t.Run("verify", func(t *testing.T) {
			e, tag, cid, a, c := legacy(t)
			res, next, err := e.verify(a, "acme", cid, "good")
			if err != nil || res.Outcome != VerifyOK || res.Session.Ref != next || res.Session.AuthLevel != session.LevelMFA {
				t.Fatalf("verify a legacy challenge: %+v %v", res, err)
			}
			e.noLegacyKeys(tag, a, c)
			st := e.sessStored(next)
			if st[sfStatus] != session.MFAVerified || st[sfChallengeID] != "" || len(e.sessStored(a)) != 0 {
				t.Fatalf("verified session %v", st)
			}
			e.sessionFieldsShareTTL(next)
		})
		t.Run("create", func(t *testing.T) {
			e, tag, _, a, c := legacy(t)
			n := e.create(tag, "acme", "ann", time.Hour, time.Hour)
			e.noLegacyKeys(tag, a, c)
			for _, ref := range []session.Ref{a, c, n} {
				if e.sessStored(ref)[sfAbsoluteExpires] == "" {
					t.Fatalf("session %s not in the user's hash", ref.Part)
				}
			}
		})
	})
}
