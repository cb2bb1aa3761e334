package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A session created with its login pending (login-time MFA) reads as pending on every path —
// the hot path (script and cache), the full view, the list — and only the verify ends that: the
// verified session lives under a new reference that was never cached, and the old reference is
// gone (at once when read fresh, as the service reads what it just changed; from the cache
// once the invalidation push arrives), so no copy decoded before the verify answers for long. A challenge on a
// logged-in session (step-up) never makes it pending. A plain session does not store the field.
func TestSessionLoginPending(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		for _, ttl := range []time.Duration{0, time.Minute} {
			e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = ttl })
			ctx := context.Background()
			tag := sessRand(t, 9)
			ref := sessRef(t, tag)
			v, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme", Status: session.MFARequired,
				LoginPending: true, Idle: time.Hour, Absolute: 2 * time.Hour})
			if err != nil || !v.LoginPending || v.Status != session.MFARequired {
				t.Fatalf("create: %+v %v", v, err)
			}
			for i := range 3 { // with the cache: a miss, then hits (memo)
				ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				if err != nil || !ac.LoginPending || ac.Status != session.MFARequired {
					t.Fatalf("authorize %d: %+v %v", i, ac, err)
				}
			}
			if v, err := e.r.Get(ctx, ref, "acme"); err != nil || !v.LoginPending {
				t.Fatalf("get: %+v %v", v, err)
			}
			if l, err := e.r.List(ctx, tag, "acme"); err != nil || len(l) != 1 || !l[0].LoginPending {
				t.Fatalf("list: %+v %v", l, err)
			}
			// A bad LoginPending combination is refused before any write.
			if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: sessRef(t, tag), UserID: "alice", TenantID: "acme", Status: session.Active,
				LoginPending: true, Idle: time.Hour, Absolute: 2 * time.Hour}); !errors.Is(err, apperr.Validation) {
				t.Fatalf("pending but ACTIVE: %v", err)
			}

			cid := sessRand(t, 16)
			e.challenge(ref, "acme", cid, "good-mac", time.Minute)
			if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || !ac.LoginPending {
				t.Fatalf("after the challenge: %+v %v", ac, err)
			}
			next := ref // (the verify keeps the reference, replacing the verifier)
			res, err := e.r.Verify(ctx, session.MFAVerification{Ref: ref, Tenant: "acme", ChallengeID: cid, CodeMAC: "good-mac", VerifierMAC: macOf("verified")})
			if err != nil || res.Outcome != session.VerifyOK || res.Session.LoginPending {
				t.Fatalf("verify: %+v %v", res, err)
			}
			// Read fresh, the old verifier is refused at once (the session service reads it so,
			// having marked it: TestSessionWritesSeenAtOnceDespiteCache); through the cache it
			// is refused once Redis's invalidation push has arrived.
			if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true, Fresh: true}); !errors.Is(err, session.ErrWrongVerifier) {
				t.Fatalf("the pre-verify token still answers: %v", err)
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				_, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				if errors.Is(err, session.ErrWrongVerifier) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the pre-verify reference still answers from the cache after 5 s: %v", err)
				}
			}
			for i := range 3 {
				ac, err := e.r.Authorize(ctx, next, session.AuthorizeOptions{VerifierMAC: macOf("verified"), View: true})
				if err != nil || ac.LoginPending || ac.Status != session.MFAVerified || ac.AuthLevel != session.LevelMFA {
					t.Fatalf("verified %d: %+v %v", i, ac, err)
				}
			}
			if got := e.sessGet(next, fieldLoginPending); got != "" {
				t.Fatalf("loginPending left after the verify: %q", got)
			}

			// Step-up on a logged-in session: MFA_REQUIRED, never pending.
			up := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			e.challenge(up, "acme", sessRand(t, 16), "mac", time.Minute)
			if ac, err := e.r.Authorize(ctx, up, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || ac.LoginPending || ac.Status != session.MFARequired {
				t.Fatalf("step-up: %+v %v", ac, err)
			}
			if got := e.sessGet(up, fieldLoginPending); got != "" {
				t.Fatalf("a step-up wrote loginPending: %q", got)
			}

			// A present value other than "1" is corrupt, never read as logged in.
			bad := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			e.sessSet(bad, fieldLoginPending, "0")
			if _, err := e.r.Authorize(ctx, bad, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, repo.ErrCorrupt) {
				t.Fatalf("loginPending 0: %v", err)
			}
			e.sessDelete(bad)
			e.everyKeyHasTTL()
		}
	})
}
