package repo

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Read-your-writes over the client-side cache: once a revoke, revoke-all, rotate, MFA
// challenge or step-up by this gateway has returned, its next authorization of the old token fails at once. Redis's
// invalidation push trails the write's reply, so without the gateway's own marks a cached copy
// answered for a moment after a logout (TestEverySessionOperationIsTraced caught it).
func TestSessionWritesSeenAtOnceDespiteCache(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side cache on this backend")
		}
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
		other := newSessEnv(t, testredis.Open(t, b), prefix, nil)
		ctx := context.Background()
		hot := func(ref session.Ref) {
			t.Helper()
			for range 3 { // the first read fills the cache, the others hit it
				if _, err := e.r.Authorize(ctx, ref); err != nil {
					t.Fatal(err)
				}
			}
			if ac, err := e.r.Authorize(ctx, ref); err != nil || !ac.CacheHit {
				t.Fatalf("not served from the cache: %+v %v", ac, err)
			}
		}
		gone := func(what string, ref session.Ref) {
			t.Helper()
			if ac, err := e.r.Authorize(ctx, ref); !errors.Is(err, apperr.NotFound) {
				t.Fatalf("%s: the old session still authorizes (%+v, %v)", what, ac, err)
			}
		}
		for i := range 60 {
			ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
			hot(ref)
			switch i % 5 {
			case 0:
				if ok, err := e.r.Revoke(ctx, ref, "acme"); err != nil || !ok {
					t.Fatalf("revoke: %v %v", ok, err)
				}
				gone("revoke", ref)
			case 1:
				if n, err := e.r.RevokeAll(ctx, ref.Tag, ""); err != nil || n < 1 {
					t.Fatalf("revoke-all: %d %v", n, err)
				}
				gone("revoke-all", ref)
			case 2:
				next := sessRef(t, ref.Tag)
				if _, err := e.r.Rotate(ctx, ref, "acme", next); err != nil {
					t.Fatal(err)
				}
				gone("rotate", ref)
				if _, err := e.r.Authorize(ctx, next); err != nil {
					t.Fatalf("rotated session: %v", err)
				}
			case 3:
				if _, err := e.r.StartChallenge(ctx, MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				if ac, err := e.r.Authorize(ctx, ref); err != nil || ac.Status != session.MFARequired {
					t.Fatalf("challenge: the next read still shows the copy from before it (%+v, %v)", ac, err)
				}
			case 4:
				// The challenge comes from another gateway (so this one holds no mark), and this
				// one caches the challenged session again before stepping it up.
				cid := sessRand(t, 16)
				if _, err := other.r.StartChallenge(ctx, MFAChallenge{Ref: ref, Tenant: "acme", ID: cid, CodeMAC: "good", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
					ac, err := e.r.Authorize(ctx, ref)
					if err != nil {
						t.Fatal(err)
					}
					if ac.CacheHit && ac.Status == session.MFARequired {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the challenged session was never cached")
					}
				}
				next := sessRef(t, ref.Tag)
				res, err := e.r.Verify(ctx, MFAVerification{Ref: ref, Tenant: "acme", ChallengeID: cid, CodeMAC: "good", Next: next})
				if err != nil || res.Outcome != VerifyOK {
					t.Fatalf("verify: %+v %v", res, err)
				}
				gone("step-up", ref)
				if ac, err := e.r.Authorize(ctx, next); err != nil || ac.AuthLevel != session.LevelMFA {
					t.Fatalf("stepped-up session: %+v %v", ac, err)
				}
			}
		}
	})
}

func TestRecentWritesMarks(t *testing.T) {
	t.Parallel()
	w := NewRecentWrites(time.Second)
	now := time.Unix(1000, 0)
	a, b := session.Ref{Tag: "AAAAAAAAAAAA", Part: "p1"}, session.Ref{Tag: "AAAAAAAAAAAA", Part: "p2"}
	other := session.Ref{Tag: "BBBBBBBBBBBB", Part: "p1"}
	if w.marked(a, now) {
		t.Fatal("marked before any write")
	}
	w.mark(a, now)
	if !w.marked(a, now.Add(999*time.Millisecond)) || w.marked(b, now) || w.marked(other, now) {
		t.Fatal("a session mark covers exactly that session for one TTL")
	}
	if w.marked(a, now.Add(time.Second)) {
		t.Fatal("mark outlived its TTL")
	}
	if w.live.Load() != 0 {
		t.Fatalf("expired mark kept: %d live", w.live.Load())
	}
	w.mark(session.Ref{Tag: a.Tag}, now)
	if !w.marked(a, now) || !w.marked(b, now) || w.marked(other, now) {
		t.Fatal("a user mark covers every session of that user only")
	}
	for i := range 4000 { // a write every millisecond for 4 TTLs
		w.mark(session.Ref{Tag: "CCCCCCCCCCCC", Part: strconv.Itoa(i)}, now.Add(time.Duration(i)*time.Millisecond))
	}
	// A steady stream of writes keeps at most about two TTLs' worth of marks, not all of them.
	if n := w.live.Load(); n > 2100 {
		t.Fatalf("%d marks kept under a stream of writes; expired ones should have been swept", n)
	}
	// Once the newest mark has expired, the next look clears them all, read again or not, and
	// the fast path (no mark live) applies again.
	if w.marked(other, now.Add(time.Hour)) || w.live.Load() != 0 {
		t.Fatalf("%d marks left after all expired", w.live.Load())
	}
	var nilW *RecentWrites
	nilW.mark(a, now)
	if nilW.marked(a, now) {
		t.Fatal("nil (cache off) marks nothing")
	}
}
