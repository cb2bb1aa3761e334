package sessionstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// touch makes ref "used" the way the hot path records use: its idle window is made short, so
// the next Authorize finds a refresh due and writes lastSeenAtMs (Redis TIME).
func (e *sessEnv) touch(ref session.Ref) {
	e.t.Helper()
	e.sessExpire(ref, 2000)
	ac, err := e.r.Authorize(context.Background(), ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
	if err != nil || !ac.Refreshed {
		e.t.Fatalf("touch %s: %+v %v", ref.ID(), ac, err)
	}
}

// At the per-user cap a new login evicts the least recently used session — by last use (the
// lastSeenAtMs an idle refresh writes, else createdAtMs), not by creation — in the create's own
// script: the evicted session, its index member and (fallback mode) its challenge key go (per
// user: every field of it, its challenge's included), and it is counted. Members whose hash
// already ended are dropped first (per user: sessions whose live marker is gone do not count)
// and evict nothing. With the refuse policy the create is refused (session-limit-reached) and
// changes nothing.
func TestSessionCreateEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		const limit = 3
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = limit })
		ctx := context.Background()
		tag := sessRand(t, 9)
		newOne := func() (session.Ref, error) {
			ref := sessRef(t, tag)
			_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "bob", TenantID: "acme",
				Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
			return ref, err
		}
		a := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		time.Sleep(3 * time.Millisecond) // distinct createdAtMs
		b := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		time.Sleep(3 * time.Millisecond)
		c := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		// A pending challenge on b: in the fallback mode a key of its own, which must go with it.
		e.challenge(b, "acme", sessRand(t, 16), "mac", time.Minute)
		time.Sleep(3 * time.Millisecond)
		e.touch(a) // the oldest by creation is now the most recently used

		d, err := newOne()
		if err != nil {
			t.Fatalf("create at the cap: %v", err)
		}
		if _, err := e.r.Authorize(ctx, b, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("the least recently used session survived: %v", err)
		}
		for _, ref := range []session.Ref{a, c, d} {
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
				t.Fatalf("session %s was evicted instead: %v", ref.ID(), err)
			}
		}
		if e.challengeLive(b) {
			t.Fatal("the evicted session's challenge was left behind")
		}
		if members := e.liveParts(tag); len(members) != limit || slices.Contains(members, b.Part) {
			t.Fatalf("sessions = %v", members)
		}
		if st := e.sessStored(b); len(st) != 0 {
			t.Fatalf("the evicted session left %v", st)
		}
		if n := e.metric("hashgate_repo_transitions", sessAttr("transition", "evict")); n != 1 {
			t.Fatalf("evictions counted = %d, want 1", n)
		}

		// Next, c is the least recently used (a was touched, d is new).
		if _, err := newOne(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.Authorize(ctx, c, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("c survived: %v", err)
		}

		// A member whose session already ended (here: deleted) is dropped; nothing is evicted.
		e.sessDrop(d)
		if _, err := newOne(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.Authorize(ctx, a, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
			t.Fatalf("a live session was evicted while a gone one could be dropped: %v", err)
		}
		if n := e.metric("hashgate_repo_transitions", sessAttr("transition", "evict")); n != 2 {
			t.Fatalf("evictions counted = %d, want 2", n)
		}
		e.everyKeyHasTTL()

		// The refuse policy: 422 session-limit-reached, nothing written or evicted.
		r := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = limit; o.LimitPolicy = LimitRefuse })
		before := r.liveParts(tag)
		ref := sessRef(t, tag)
		_, err = r.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "bob", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
		if !errors.Is(err, apperr.SessionLimit) {
			t.Fatalf("refuse policy: %v", err)
		}
		after := r.liveParts(tag)
		if !slices.Equal(before, after) || len(after) != limit {
			t.Fatalf("a refused create changed the sessions: %v → %v", before, after)
		}
		if _, err := r.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("a refused create wrote its session: %v", err)
		}
	})
}

// The cap is reached by many logins at once: the index never holds more than the cap, every
// create succeeds, and exactly the surplus is evicted.
func TestSessionCreateEvictsUnderConcurrency(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		const limit, logins = 5, 40
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = limit })
		ctx := context.Background()
		tag := sessRand(t, 9)
		errs := make(chan error, logins)
		refs := make(chan session.Ref, logins)
		for range logins {
			go func() {
				ref := sessRef(t, tag)
				_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "bob", TenantID: "acme",
					Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
				errs <- err
				refs <- ref
			}()
		}
		var all []session.Ref
		for range logins {
			if err := <-errs; err != nil {
				t.Errorf("create: %v", err)
			}
			all = append(all, <-refs)
		}
		live := 0
		for _, ref := range all {
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err == nil {
				live++
			}
		}
		if members := e.liveParts(tag); len(members) != limit || live != limit {
			t.Fatalf("%d sessions kept (%v), %d live sessions; want %d", len(members), members, live, limit)
		}
		if n := e.metric("hashgate_repo_transitions", sessAttr("transition", "evict")); n != logins-limit {
			t.Fatalf("evictions counted = %d, want %d", n, logins-limit)
		}
	})
}

// A login at the cap while the user's slot moves between masters, one key at a time (the index
// first, then the sessions, so most steps split them across nodes; per user: the one hash):
// each create either evicts exactly one session and adds itself (the index stays at the cap),
// or is refused as unavailable having changed nothing — never a half-done eviction. Whether a
// session is alive is read key by key (single-key reads follow the slot's redirections):
// TestSessionIndexDuringSlotMigration is the one that asks every session to authorize.
func TestSessionEvictDuringSlotMigration(t *testing.T) {
	t.Parallel()
	for _, v := range sessMigrationVariants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			const limit = 4
			cl, e := v.env(t, func(o *SessionOptions) { o.MaxPerUser = limit })
			ctx := context.Background()
			tag := sessRand(t, 9)
			live := map[session.Ref]bool{}
			for range limit {
				ref := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
				// A pending challenge on each: in the fallback mode a key of its own, declared too.
				e.challenge(ref, "acme", sessRand(t, 16), "m", time.Minute)
				live[ref] = true
			}
			index := e.r.devicesKey(tag)
			slot, err := cl.KeySlot(ctx, index)
			if err != nil {
				t.Fatal(err)
			}
			from, err := cl.Owner(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			evicted, refused := 0, 0
			step := func(n int) {
				t.Helper()
				ref := sessRef(t, tag)
				_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme",
					Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
				gone := 0
				for r := range live {
					if !e.sessAlive(r) {
						gone++
						delete(live, r)
					}
				}
				switch {
				case err == nil:
					if gone != 1 {
						t.Errorf("%d keys moved: a create at the cap ended %d sessions, want 1", n, gone)
					}
					live[ref] = true
					evicted++
				case store.IsUnavailable(err):
					refused++
					if gone != 0 {
						t.Errorf("%d keys moved: a refused create ended %d sessions", n, gone)
					}
				default:
					t.Errorf("%d keys moved: create: %v", n, err)
				}
			}
			m := testredis.Migration{Slot: slot, From: from, To: (from + 1) % len(cl.Nodes), Batch: 1,
				Order: func(left []string) []string {
					if i := slices.Index(left, index); i >= 0 {
						return append([]string{index}, slices.Delete(slices.Clone(left), i, i+1)...)
					}
					return left
				},
				After: step}
			if _, err := cl.Migrate(ctx, m); err != nil {
				t.Fatalf("migrate slot %d: %v", slot, err)
			}
			t.Logf("creates at the cap during the move: %d evicted one session, %d refused", evicted, refused)
			step(-1) // after the move: always succeeds
			members := e.liveParts(tag)
			if len(members) != limit || len(live) != limit {
				t.Fatalf("after the move: sessions %v, %d live; want %d", members, len(live), limit)
			}
			for r := range live {
				if !slices.Contains(members, r.Part) {
					t.Errorf("live session %s is not in the index", r.ID())
				}
			}
		})
	}
}

// A member whose key holds another type (or a hash without timestamps; per user: a session
// whose timestamps do not parse) cannot be a usable session: at the cap it is evicted first,
// and the create neither fails nor evicts a good one.
func TestSessionEvictUnreadableFirst(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = 2 })
		ctx := context.Background()
		tag := sessRand(t, 9)
		good := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		time.Sleep(3 * time.Millisecond) // bad is the more recently created
		bad := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		e.sessSpoil(bad)
		next, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: sessRef(t, tag), UserID: "bob", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		for _, ref := range []session.Ref{good, next.Ref} {
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
				t.Fatalf("%s: %v", ref.ID(), err)
			}
		}
		if st := e.sessStored(bad); len(st) != 0 { // (a string left in place fails the HGETALL)
			t.Fatalf("the unreadable session's fields are still there: %v", st)
		}
	})
}
