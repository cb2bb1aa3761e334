package sessionstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

var _ = storetest.Events

// TestRefusedSessionWritesWakeNoRelay: the relay is told of a user after a session write that
// appended events (create, a wrong MFA code, a revocation), not after one that appended none (a
// verify past the attempt limit, an unknown session's rotation, the revocation of a session
// already gone, a revoke-all that found none): make bench's MFA row, 429 after the first
// attempts, had the relay read the user's outbox after every refused request, and its revoke
// row (its sessions revoked once, then again and again) after every repeated revocation.
func TestRefusedSessionWritesWakeNoRelay(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		var told atomic.Int64
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Relay = func(string) { told.Add(1) } })
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		e.lockOut(ctx, a)
		want := told.Load() // create, challenge, each wrong code
		if want != 2+int64(e.r.o.MFA.Limit) {
			t.Fatalf("the relay was told %d times after %d writes that appended events", want, 2+e.r.o.MFA.Limit)
		}
		for range 5 {
			if res, _ := e.r.Verify(ctx, session.MFAVerification{Ref: a, Tenant: "acme", ChallengeID: "c1", CodeMAC: "bad!", VerifierMAC: testMAC}); res != nil && res.Outcome == session.VerifyOK {
				t.Fatal("a verify past the limit passed")
			}
		}
		if _, err := e.r.Rotate(ctx, session.Ref{Tag: tag, Part: sessPart(t)}, "acme", testMAC); err == nil {
			t.Fatal("an unknown session's rotation passed")
		}
		if n := told.Load() - want; n != 0 {
			t.Fatalf("refused writes woke the relay %d times", n)
		}
		if ok, err := e.r.Revoke(ctx, a, "acme"); err != nil || !ok {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if told.Load() != want+1 {
			t.Fatalf("a revocation woke the relay %d times, want once", told.Load()-want)
		}
		for range 3 {
			if ok, err := e.r.Revoke(ctx, a, "acme"); err != nil || ok {
				t.Fatalf("revoke again: %v %v", ok, err)
			}
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 0 {
			t.Fatalf("revoke-all of none: %d %v", n, err)
		}
		if n := told.Load() - want - 1; n != 0 {
			t.Fatalf("revocations that ended nothing woke the relay %d times", n)
		}
	})
}
