package sessionstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// sessAlive reports whether the session exists as stored in either layout (its hash, or its
// absoluteExpiresAtMs field in the user's hash).
func (e *sessEnv) sessAlive(ref session.Ref) bool {
	e.t.Helper()
	return e.sessPTTL(ref) != -2
}

// sessMigrationVariants are the layouts the slot-migration tests run in, each on a private
// cluster: per user (the default on Redis 8), per session (forced), and the fallback mode
// (per session, challenge keys of their own).
var sessMigrationVariants = []sessMigrationVariant{
	{"per-user", "", LayoutPerUser},
	{"per-session", "", LayoutPerSession},
	{string(store.FieldExpiryFallback), store.FieldExpiryFallback, LayoutPerSession},
}

type sessMigrationVariant struct {
	name   string
	mode   store.FieldExpiry
	layout SessionLayout
}

// env is a private cluster and a sessions environment on it in the variant's layout (tweak,
// when set, edits the options further).
func (v sessMigrationVariant) env(t *testing.T, tweak func(*SessionOptions)) (*testredis.Cluster, *sessEnv) {
	t.Helper()
	cl := testredis.StartCluster(t)
	s := testredis.Open(t, testredis.Backend{Name: "private cluster", Env: testredis.EnvCluster, URL: cl.URL(), FieldExpiry: v.mode})
	return cl, newSessEnv(t, s, testredis.Prefix(t), func(o *SessionOptions) {
		o.Layout = v.layout
		if tweak != nil {
			tweak(o)
		}
	})
}

// tagKeys lists the keys of the user with tag.
func (e *sessEnv) tagKeys(tag string) []string {
	e.t.Helper()
	return slices.DeleteFunc(e.sessionKeys(), func(k string) bool { return !strings.Contains(k, "{"+tag+"}") })
}

// List answers the user's live sessions of the caller's tenant, soonest absolute deadline
// first, each decoded as every reader decodes: a corrupt session is left out (and counted), an
// idle-expired one is absent. In the per-user layout that is one round trip (one script) and
// writes nothing; in the per-session layout the index read, one pipeline, and the prune of
// the expired member.
func TestSessionListOrderExpiryCorrupt(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		b := e.create(tag, "acme", "alice", time.Hour, time.Hour)
		a := e.create(tag, "acme", "alice", time.Hour, 3*time.Hour)
		c := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		d := e.create(tag, "acme", "alice", time.Hour, 4*time.Hour)
		other := e.create("", "acme", "bob", time.Hour, time.Hour)
		e.sessSet(c, fieldStatus, "BOGUS")
		e.sessExpire(d, 1)
		// Until a read of the hash no longer answers the session (HPTTL may say -2 a
		// millisecond before HGETALL stops answering the field).
		for len(e.sessStored(d)) > 0 {
			time.Sleep(time.Millisecond)
		}
		e.count.Reset()
		list, err := e.r.List(ctx, tag, "acme")
		if err != nil {
			t.Fatal(err)
		}
		cmds := e.count.Reset()
		var got []session.Ref
		for _, x := range list {
			got = append(got, x.Ref)
		}
		if !slices.Equal(got, []session.Ref{b, a}) {
			t.Fatalf("listed %v, want %v then %v (soonest deadline first, without the corrupt %v and the expired %v)", got, b, a, c, d)
		}
		x := list[0]
		if x.UserID != "alice" || x.TenantID != "acme" || x.DeviceLabel != "laptop" || x.Status != session.Active ||
			x.AuthLevel != session.LevelBasic || x.CreatedAt.IsZero() || !x.LastSeenAt.Equal(x.CreatedAt) ||
			!x.UpdatedAt.Equal(x.CreatedAt) || x.SchemaVersion != repo.SchemaVersion || x.ChallengeLive {
			t.Fatalf("listed session: %+v", x)
		}
		if d := time.Until(x.IdleExpiresAt); d < 59*time.Minute || d > time.Hour+time.Second {
			t.Fatalf("idle deadline in %v, want the hour of the idle window", d)
		}
		if d := time.Until(list[1].AbsoluteExpiresAt); d < 179*time.Minute || d > 3*time.Hour+time.Second {
			t.Fatalf("absolute deadline in %v, want 3h", d)
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("object", "session"), sessAttr("outcome", "corrupt")); n != 1 {
			t.Fatalf("corrupt reads counted = %d, want 1", n)
		}
		e.sessSent("list", cmds)
		if l, err := e.r.List(ctx, tag, "globex"); err != nil || len(l) != 0 {
			t.Fatalf("list by another tenant: %+v %v", l, err)
		}
		if l, err := e.r.List(ctx, other.Tag, "acme"); err != nil || len(l) != 1 || l[0].Ref != other {
			t.Fatalf("the other user's list: %+v %v", l, err)
		}
		e.everyKeyHasTTL()
	})
}

// A session's fields that no view reads (the MFA code's MAC, the device hashes) do not leave
// Redis on a list; a challenge held by the session shows as live.
func TestSessionListReadsOnlyViewFields(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, s *store.Store, e *sessEnv) {
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		e.sessSet(ref, fieldCodeMAC, "secret-mac-value")
		e.sessSet(ref, fieldChallengeID, "challenge-1")
		e.sessSet(ref, fieldChallengeAt, "1")
		rep, err := e.r.runOn(ctx, e.s.Client, "session_u_list", scriptPerUserList, []string{e.r.userKey(ref.Tag)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := rep.StrMap(0)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			if strings.HasSuffix(k, ":"+fieldCodeMAC) || strings.HasSuffix(k, ":"+fieldIPHash) || strings.HasSuffix(k, ":"+fieldUserAgentHash) || v == "secret-mac-value" {
				t.Errorf("the list script answered %s", k)
			}
		}
		list, err := e.r.List(ctx, ref.Tag, "acme")
		if err != nil || len(list) != 1 || !list[0].ChallengeLive {
			t.Fatalf("list: %+v %v, want the session with its challenge live", list, err)
		}
	})
}

// Revoking one session removes every field of it and nothing of the user's other sessions;
// another tenant's revoke changes nothing; a second revoke reports the session gone and writes
// nothing. Once the user's last session is revoked, no key of the user is left.
func TestSessionRevokeOneOfMany(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		b := e.create(tag, "acme", "alice", time.Hour, 3*time.Hour)
		e.sessSet(b, fieldChallengeID, "challenge-1")
		e.sessSet(b, fieldCodeMAC, "mac")
		keptA := e.sessStored(a)
		if ok, err := e.r.Revoke(ctx, b, "globex"); ok || err != nil {
			t.Fatalf("revoke by another tenant: %v %v", ok, err)
		}
		if !e.sessAlive(b) {
			t.Fatal("another tenant's revoke deleted the session")
		}
		if ok, err := e.r.Revoke(ctx, b, "acme"); !ok || err != nil {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if st := e.sessStored(b); len(st) != 0 {
			t.Fatalf("revoked session left %v", st)
		}
		if st := e.sessStored(a); !mapsEqual(st, keptA) {
			t.Fatalf("revoking another session changed this one: %v, was %v", st, keptA)
		}
		after := e.hgetall(e.sessKey(a))
		if ok, err := e.r.Revoke(ctx, b, "acme"); ok || err != nil {
			t.Fatalf("revoke again: %v %v", ok, err)
		}
		if again := e.hgetall(e.sessKey(a)); !mapsEqual(again, after) {
			t.Fatalf("a revoke that deleted nothing wrote: %v, was %v", again, after)
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 1 || list[0].Ref != a {
			t.Fatalf("list after revoke: %+v %v", list, err)
		}
		e.everyKeyHasTTL()
		if ok, err := e.r.Revoke(ctx, a, "acme"); !ok || err != nil {
			t.Fatalf("revoke the last: %v %v", ok, err)
		}
		if left := e.tagKeys(tag); len(left) != 0 {
			t.Fatalf("after the user's last session was revoked: %v", left)
		}
		for outcome, want := range map[string]int64{"ok": 2, "gone": 1, "other_tenant": 1} {
			if n := e.metric("hashgate_repo_transitions", sessAttr("transition", "revoke"), sessAttr("outcome", outcome)); n != want {
				t.Errorf("revoke %s counted %d, want %d", outcome, n, want)
			}
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Revoke-all keeps the session asked for, with its fields as they were, and counts only the
// live sessions it ended (a session whose marker is gone but whose other fields linger is
// cleaned, not counted); without a session to keep, or with one that is not live, nothing of
// the user is left. Another user's sessions are untouched. In the per-user layout it is one
// script, without reading an index first.
func TestSessionRevokeAllKeepsOne(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		b := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		c := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		d := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		e.sessDrop(d)
		other := e.create("", "acme", "bob", time.Hour, 2*time.Hour)
		keptA := e.sessStored(a)
		e.count.Reset()
		n, err := e.r.RevokeAll(ctx, tag, a.Part)
		if err != nil || n != 2 {
			t.Fatalf("revoke all but one: %d %v, want 2", n, err)
		}
		e.sessSent("revoke-all", slices.DeleteFunc(e.count.Reset(), func(c string) bool { return c == "ROLE" || c == "WAIT" }))
		for _, ref := range []session.Ref{b, c, d} {
			if st := e.sessStored(ref); len(st) != 0 {
				t.Fatalf("revoked session %s left %v", ref.ID(), st)
			}
		}
		if st := e.sessStored(a); !mapsEqual(st, keptA) {
			t.Fatalf("the kept session changed: %v, was %v", st, keptA)
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 1 || list[0].Ref != a {
			t.Fatalf("list after revoke-all: %+v %v", list, err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, a.Part); err != nil || n != 0 {
			t.Fatalf("revoke all but the one again: %d %v", n, err)
		}
		e.everyKeyHasTTL()
		// A session to keep that is not live keeps nothing.
		if n, err := e.r.RevokeAll(ctx, tag, b.Part); err != nil || n != 1 {
			t.Fatalf("revoke all but a revoked one: %d %v, want 1", n, err)
		}
		if left := e.tagKeys(tag); len(left) != 0 {
			t.Fatalf("after revoke-all: %v", left)
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 0 {
			t.Fatalf("revoke all of none: %d %v", n, err)
		}
		if list, err := e.r.List(ctx, other.Tag, "acme"); err != nil || len(list) != 1 {
			t.Fatalf("another user's sessions: %+v %v", list, err)
		}
		e.everyKeyHasTTL()
	})
}
