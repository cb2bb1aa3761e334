package sessionstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The forward-auth read (Authorize without View) asks Redis for at most seven fields (sessHotFields) in one round
// trip on a miss — never the view's eighteen — under broadcast tracking (the default) and without
// the cache (the script answers the seven); default tracking reads the view through rueidis' cache
// (only a read through it is tracked). Its answer holds what the decision needs and nothing else, a
// kept copy answers with no round trip, and "who am I" (Authorize) still gets the whole view from
// the same kept session after one read of the view fields.
func TestSessionHotMissReadsHotFields(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
		ctx := context.Background()
		ref := e.create("", "acme", "alice", 20*time.Second, time.Hour)
		// requested is how many fields the call's reads asked Redis for, and its round trips.
		requested := func(name string, read func() (*session.AuthContext, error)) (*session.AuthContext, int, int64) {
			t.Helper()
			e.count.Reset()
			ac, err := read()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return ac, e.sessFieldsRead(e.count.Commands()), e.count.Trips()
		}
		hot := func() (*session.AuthContext, error) {
			return e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC})
		}
		view := func() (*session.AuthContext, error) {
			return e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		}

		ac, fields, trips := requested("hot miss", hot)
		// What the backend runs decides, not what the repository concluded from it: a
		// broadcast backend must get the seven-field read.
		want := len(sessHotFields)
		if s.Caps.ClientCache && !b.Broadcast {
			want = e.sessViewRead()
		}
		if fields != want || trips != 1 {
			t.Fatalf("hot miss: %d fields in %d round trips, want %d in 1", fields, trips, want)
		}
		if ac.UserID != "alice" || ac.TenantID != "acme" || ac.AuthLevel != session.LevelBasic || ac.LoginPending ||
			ac.IdleExpiresAt.IsZero() || ac.CacheHit {
			t.Fatalf("hot miss: %+v", ac)
		}
		if d := time.Until(ac.IdleExpiresAt); d < 19*time.Second || d > 20*time.Second+50*time.Millisecond {
			t.Fatalf("hot miss: idle expiry in %v, want about 20s", d)
		}
		if b.Broadcast && (!ac.Partial || !ac.CreatedAt.IsZero() || ac.DeviceLabel != "") {
			t.Fatalf("hot miss answered more than the hot fields: %+v", ac)
		}
		if !s.Caps.ClientCache {
			return // every call is the script
		}
		// Kept: hits cost nothing (a trailing push of the create may drop the copy once more).
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if ac, _, trips = requested("hot hit", hot); trips == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the hot read was never kept")
			}
		}
		if !ac.CacheHit || ac.UserID != "alice" {
			t.Fatalf("hot hit: %+v", ac)
		}
		// The view needs its own read once, then is kept too.
		v, _, trips := requested("view", view)
		if v.Partial || v.DeviceLabel != "laptop" || v.CreatedAt.IsZero() || v.SchemaVersion != repo.SchemaVersion || trips > 1 {
			t.Fatalf("view: %+v in %d round trips", v, trips)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if v, _, trips = requested("view hit", view); trips == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the view was never kept")
			}
		}
		if v.Partial || v.DeviceLabel != "laptop" || !v.CacheHit {
			t.Fatalf("view hit: %+v", v)
		}
		// A revocation reaches the kept copy through the push.
		e.sessDelete(ref)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC}); errors.Is(err, apperr.NotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the deleted session is still served")
			}
		}
	})
}

// Near its absolute deadline a session's idle window cannot slide any further. The hot read
// does not know the deadline (it reads seven fields), so the first time the window looks due
// the refresh script runs; it answers the deadline, the kept copy learns it, and later requests
// are served without running the script again on every hit (under broadcast tracking; default
// tracking reads the view, which holds the deadline).
func TestSessionNearDeadlineNotRefreshedOnEveryHit(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side caching here (every call is the script)")
		}
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
		ctx := context.Background()
		// 20 s idle, 4 s to the absolute deadline: under a quarter of the window is left, and
		// sliding cannot move it.
		ref := e.create("", "acme", "alice", 20*time.Second, time.Hour)
		abs := e.serverMs() + 4000
		e.sessSet(ref, fieldAbsoluteExpires, strconv.FormatInt(abs, 10))
		e.sessExpireAt(ref, abs)
		// Settle: the first reads may run the script (and the setup's pushes, delivered by each
		// tracking connection, may drop the copy again); wait until a read costs nothing.
		scripts := 0
		for deadline := time.Now().Add(1500 * time.Millisecond); ; time.Sleep(time.Millisecond) {
			e.count.Reset()
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC}); err != nil {
				t.Fatalf("authorize: %v", err)
			}
			if e.count.Trips() == 0 {
				break
			}
			if slices.Contains(e.count.Names(), "EVALSHA") {
				scripts++
			}
			if time.Now().After(deadline) {
				t.Fatalf("never served without a round trip: the refresh script ran %d times in 1.5 s for a window that cannot slide", scripts)
			}
		}
		e.count.Reset()
		scripts = 0
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC})
			if err != nil {
				t.Fatalf("authorize: %v", err)
			}
			if ac.Refreshed {
				t.Fatalf("a session at its absolute deadline was extended: %+v", ac)
			}
		}
		for _, c := range e.count.Names() {
			if c == "EVALSHA" {
				scripts++
			}
		}
		// About 400 requests in 2 s once kept: none runs the script (a refresh could not move
		// the window), where a copy that never learnt the deadline runs it on every request.
		if scripts > 1 {
			t.Fatalf("the refresh script ran %d times in 2 s for a window that cannot slide", scripts)
		}
		if p := e.sessPTTL(ref); p > 4000 {
			t.Fatalf("pttl %d: extended past the absolute deadline", p)
		}
	})
}
