package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// A token with another verifier slides nothing: a session due for its idle refresh keeps its
// remaining window when a wrong verifier is presented (read fresh, by the script, and through
// the kept copy), and its own verifier then refreshes it.
func TestSessionWrongVerifierSlidesNothing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *sessEnv) {
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		e.sessExpire(ref, 60_000) // a minute left of the hour: due
		for _, o := range []session.AuthorizeOptions{{VerifierMAC: macOf("wrong"), Fresh: true}, {VerifierMAC: macOf("wrong"), View: true},
			{VerifierMAC: macOf("wrong")}} {
			if _, err := e.r.Authorize(ctx, ref, o); !errors.Is(err, session.ErrWrongVerifier) {
				t.Fatalf("wrong verifier %+v: %v", o, err)
			}
		}
		time.Sleep(20 * time.Millisecond) // (a background refresh, had one started)
		if p := e.sessPTTL(ref); p > 60_000 {
			t.Fatalf("a wrong verifier slid the window: PTTL %d ms", p)
		}
		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, Fresh: true})
		if err != nil || !ac.Refreshed {
			t.Fatalf("the session's own verifier: %+v %v", ac, err)
		}
		if p := e.sessPTTL(ref); p < 59*60_000 {
			t.Fatalf("the session's own verifier did not slide the window: PTTL %d ms", p)
		}
	})
}

// A kept copy older than a rotation (another gateway rotated; its push has not arrived) never
// refuses the new token: a verifier the copy does not hold is asked of Redis, which knows the
// new one, and the old token is refused there. Deterministic: the copy is put back stale by hand.
func TestSessionStaleCopyAsksRedisForANewVerifier(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *sessEnv) {
		if e.r.memo == nil {
			t.Skip("no kept copies")
		}
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		for range 2 {
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.r.Rotate(ctx, ref, "acme", macOf("rotated")); err != nil {
			t.Fatal(err)
		}
		// The copy as it was before the rotation, put back after the push dropped it.
		var stale *memoEntry
		for deadline := time.Now().Add(5 * time.Second); stale == nil; time.Sleep(time.Millisecond) {
			if _, ok := e.r.memo.get(ref, time.Now()); ok {
				if time.Now().After(deadline) {
					t.Fatal("the rotation's push never dropped the kept copy")
				}
				continue
			}
			stale = &memoEntry{hot: hotSession{userID: "alice", tenantID: "acme", level: session.LevelBasic, mac: testMAC,
				idle: time.Hour.Milliseconds(), end: time.Now().Add(time.Hour).UnixMilli(), abs: time.Now().Add(2 * time.Hour).UnixMilli(),
				outcome: "found", owner: session.OwnerUnchecked}, until: time.Now().Add(time.Minute)}
		}
		e.r.memo.put(ref, stale, e.r.memo.version(ref), time.Now())
		if _, ok := e.r.memo.get(ref, time.Now()); !ok {
			t.Fatal("the stale copy was not kept")
		}
		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: macOf("rotated")})
		if err != nil || ac.CacheHit || ac.UserID != "alice" {
			t.Fatalf("the new token against a stale copy: %+v %v", ac, err)
		}
		if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC}); !errors.Is(err, session.ErrWrongVerifier) {
			t.Fatalf("the old token after the rotation: %v", err)
		}
	})
}
