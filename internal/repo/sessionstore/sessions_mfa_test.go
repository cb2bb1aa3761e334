package sessionstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// challengeLive looks where the server's mode and the layout keep the challenge: the session's
// fields (in its own hash or the user's) or a key.
func (e *sessEnv) challengeLive(ref session.Ref) bool {
	e.t.Helper()
	if e.s.Caps.FieldExpiry == store.FieldExpiryFallback {
		n, err := e.do(e.s.Client.B().Exists().Key(e.r.challengeKey(ref)).Build()).AsInt64()
		if err != nil {
			e.t.Fatal(err)
		}
		return n == 1
	}
	n, err := e.do(e.s.Client.B().Hexists().Key(e.sessKey(ref)).Field(e.sessField(ref, fieldChallengeID)).Build()).AsInt64()
	if err != nil {
		e.t.Fatal(err)
	}
	return n == 1
}

// challengeTTL is the challenge's remaining lifetime as the server reports it.
func (e *sessEnv) challengeTTL(ref session.Ref) time.Duration {
	e.t.Helper()
	if e.s.Caps.FieldExpiry == store.FieldExpiryFallback {
		return time.Duration(e.pttl(e.r.challengeKey(ref))) * time.Millisecond
	}
	// HPTTL, not HTTL: HTTL rounds down to whole seconds (a 1s TTL reads 0 at once on the
	// embedded store).
	c := e.s.Client.B().Arbitrary("HPTTL").Keys(e.sessKey(ref)).Args("FIELDS", "2", e.sessField(ref, fieldChallengeID), e.sessField(ref, fieldCodeMAC)).Build()
	v, err := e.do(c).AsIntSlice()
	if err != nil || len(v) != 2 || v[0]-v[1] > 5 || v[1]-v[0] > 5 {
		e.t.Fatalf("HPTTL = %v, %v", v, err)
	}
	return time.Duration(v[0]) * time.Millisecond
}

func (e *sessEnv) challenge(ref session.Ref, tenant, id, mac string, ttl time.Duration) {
	e.t.Helper()
	if _, err := e.r.StartChallenge(context.Background(), session.MFAChallenge{Ref: ref, Tenant: tenant, ID: id, CodeMAC: mac, TTL: ttl}); err != nil {
		e.t.Fatal(err)
	}
}

// verify runs one attempt; a step-up keeps the session's reference (returned) and gives it the
// verifier MAC testMAC (TestSessionStoreContract checks the replacement of the MAC).
func (e *sessEnv) verify(ref session.Ref, tenant, id, mac string) (*session.VerifyResult, session.Ref, error) {
	res, err := e.r.Verify(context.Background(), session.MFAVerification{Ref: ref, Tenant: tenant, ChallengeID: id, CodeMAC: mac, VerifierMAC: testMAC})
	return res, ref, err
}

// lockOut starts the challenge "c1" (code MAC "good") on tenant acme's session ref and answers
// it wrong as many times as the MFA window allows: the last attempt locks the user.
func (e *sessEnv) lockOut(ctx context.Context, ref session.Ref) {
	e.t.Helper()
	if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "acme", ID: "c1", CodeMAC: "good", TTL: time.Minute}); err != nil {
		e.t.Fatal(err)
	}
	for range e.r.o.MFA.Limit {
		if _, err := e.r.Verify(ctx, session.MFAVerification{Ref: ref, Tenant: "acme", ChallengeID: "c1", CodeMAC: "bad!", VerifierMAC: testMAC}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// The challenge fields (or key) expire on their own; the session stays.
func TestSessionChallengeExpiresAlone(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "globex", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Second}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("challenge by another tenant: %v", err)
		}
		cid := sessRand(t, 16)
		e.challenge(ref, "acme", cid, "mac-1", time.Second)
		if !e.challengeLive(ref) {
			t.Fatal("challenge not stored")
		}
		if d := e.challengeTTL(ref); d <= 0 || d > time.Second {
			t.Fatalf("challenge TTL = %v", d)
		}
		if v, _ := e.r.Get(ctx, ref, "acme"); v.Status != session.MFARequired || !v.ChallengeLive {
			t.Fatalf("after challenge: %+v", v)
		}
		e.sessFieldsShareTTL(ref)
		time.Sleep(1600 * time.Millisecond)
		if e.challengeLive(ref) {
			t.Fatal("the challenge outlived its TTL")
		}
		if p := e.sessPTTL(ref); p < 59*60*1000 {
			t.Fatalf("session TTL changed: %d", p)
		}
		v, err := e.r.Get(ctx, ref, "acme")
		if err != nil || v.ChallengeLive || v.Status != session.MFARequired {
			t.Fatalf("session after the challenge expired: %+v %v", v, err)
		}
		if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
			t.Fatalf("session gone with its challenge: %v", err)
		}
		res, _, err := e.verify(ref, "acme", cid, "mac-1")
		if err != nil || res.Outcome != session.VerifyNoChallenge {
			t.Fatalf("verify after expiry: %+v %v", res, err)
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("outcome", "expired_challenge")); n < 2 {
			t.Fatalf("expired_challenge reads counted = %d", n)
		}
	})
}

func TestSessionVerify(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		cid := sessRand(t, 16)
		e.challenge(ref, "acme", cid, "good-mac", time.Minute)

		if _, _, err := e.verify(ref, "globex", cid, "good-mac"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant: %v", err)
		}
		res, _, err := e.verify(ref, "acme", sessRand(t, 16), "good-mac")
		if err != nil || res.Outcome != session.VerifyNoChallenge || res.Attempts.Count != 1 {
			t.Fatalf("another challenge id: %+v %v", res, err)
		}
		res, _, err = e.verify(ref, "acme", cid, "bad-mac!")
		if err != nil || res.Outcome != session.VerifyWrongCode || res.FailedAttempts != 1 || res.Attempts.Count != 2 {
			t.Fatalf("wrong code: %+v %v", res, err)
		}
		if res.Attempts.Reset <= 0 || res.Attempts.Reset > 10*time.Minute {
			t.Fatalf("reset = %v", res.Attempts.Reset)
		}
		next := ref // (a step-up keeps the reference, replacing the verifier)
		res, err = e.r.Verify(ctx, session.MFAVerification{Ref: ref, Tenant: "acme", ChallengeID: cid, CodeMAC: "good-mac", VerifierMAC: macOf("stepped")})
		if err != nil || res.Outcome != session.VerifyOK || res.Session.Ref != next || res.Session.AuthLevel != session.LevelMFA {
			t.Fatalf("right code: %+v %v", res, err)
		}
		if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, session.ErrWrongVerifier) {
			t.Fatalf("the pre-step-up token still works: %v", err)
		}
		ac, err := e.r.Authorize(ctx, next, session.AuthorizeOptions{VerifierMAC: macOf("stepped"), View: true})
		if err != nil || ac.Status != session.MFAVerified || ac.AuthLevel != session.LevelMFA {
			t.Fatalf("stepped-up session: %+v %v", ac, err)
		}
		v, err := e.r.Get(ctx, next, "acme")
		if err != nil || v.MFAVerifiedAt.IsZero() || v.ChallengeLive || v.FailedMFAAttempts != 1 {
			t.Fatalf("view: %+v %v", v, err)
		}
		if e.challengeLive(next) || e.challengeLive(ref) {
			t.Fatal("challenge left behind")
		}
		e.sessFieldsShareTTL(next)
		res, _, err = e.verify(next, "acme", cid, "good-mac")
		if err != nil || res.Outcome != session.VerifyNoChallenge {
			t.Fatalf("replay: %+v %v", res, err)
		}
		if list, _ := e.r.List(ctx, ref.Tag, "acme"); len(list) != 1 || list[0].Ref != next {
			t.Fatalf("index: %+v", list)
		}
		e.everyKeyHasTTL()
	})
}

// In the per-user layout the challenge's fields never outlive the session's idle window: their
// TTL is the shorter of the challenge's and what is left of the window, and so is the expiry
// StartChallenge answers.
func TestSessionChallengeCappedByIdle(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, _ *store.Store, e *sessEnv) {
		ref := e.create("", "acme", "alice", time.Minute, 2*time.Hour)
		exp, err := e.r.StartChallenge(context.Background(), session.MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if d := e.challengeTTL(ref); d <= 0 || d > time.Minute {
			t.Fatalf("challenge TTL %v, want at most the idle minute left", d)
		}
		if now := time.UnixMilli(e.serverMs()); exp.After(now.Add(time.Minute)) || !exp.After(now) {
			t.Fatalf("challenge expires at %v, server time %v: want within the idle minute", exp, now)
		}
		e.sessFieldsShareTTL(ref)
	})
}

// 64 concurrent wrong attempts: exactly the limit is evaluated, the rest are refused.
func TestSessionVerifyConcurrentLimit(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		cid := sessRand(t, 16)
		e.challenge(ref, "acme", cid, "good-mac", time.Minute)
		counts := map[session.VerifyOutcome]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				res, _, err := e.verify(ref, "acme", cid, "wrong-mac")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				counts[res.Outcome]++
				if res.Outcome == session.VerifyLimited && res.Attempts.Allowed {
					t.Errorf("limited decision %+v", res.Attempts)
				}
			})
		}
		wg.Wait()
		if counts[session.VerifyWrongCode] != 5 || counts[session.VerifyLimited] != 59 {
			t.Fatalf("outcomes %v, want 5 wrong_code and 59 rate_limited", counts)
		}
		if got := e.sessGet(ref, fieldFailedMFA); got != "5" {
			t.Fatalf("failedMfaAttempts = %s", got)
		}
		e.sessFieldsShareTTL(ref)
		// Even the right code is refused once the window is spent.
		if res, _, err := e.verify(ref, "acme", cid, "good-mac"); err != nil || res.Outcome != session.VerifyLimited {
			t.Fatalf("right code after the limit: %+v %v", res, err)
		}
		if p := e.pttl(e.r.keys.Prefix + ":v1:rl:{" + ref.Tag + "}:mfa"); p <= 0 || p > (10*time.Minute+time.Minute).Milliseconds() {
			t.Fatalf("counter pttl = %d", p)
		}
	})
}

// 1,000 parallel attempts, some with the right code: never more evaluated than the limit, at
// most one success.
func TestSessionVerifyThousandParallel(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			// 1,000 calls queue on one connection (the embedded store has no pool) under -race
			// on two shared CPUs: a generous per-call deadline keeps this a test of the limit,
			// not of the machine's speed.
			s := testredis.Open(t, b, func(o *store.Options) { o.Timeout = 30 * time.Second })
			thousandVerifies(t, s, testredis.Prefix(t))
		})
	}
}

func thousandVerifies(t *testing.T, s *store.Store, prefix string) {
	e := newSessEnv(t, s, prefix, nil)
	awayFromWindowEdge(t, s, e.r.o.MFA.Window)
	ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
	cid := sessRand(t, 16)
	e.challenge(ref, "acme", cid, "good-mac", time.Minute)
	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Go(func() {
			mac := "wrong-mac"
			if i%7 == 3 {
				mac = "good-mac"
			}
			res, _, err := e.verify(ref, "acme", cid, mac)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, apperr.NotFound):
				counts["not_found"]++ // after a success the old reference is gone
			case err != nil:
				t.Error(err)
			default:
				counts[string(res.Outcome)]++
			}
		})
	}
	wg.Wait()
	evaluated := counts[string(session.VerifyOK)] + counts[string(session.VerifyWrongCode)] + counts[string(session.VerifyNoChallenge)]
	if evaluated > 5 || counts[string(session.VerifyOK)] > 1 {
		t.Fatalf("outcomes %v: %d evaluated attempts, limit 5", counts, evaluated)
	}
	if evaluated+counts[string(session.VerifyLimited)]+counts["not_found"] != 1000 {
		t.Fatalf("outcomes %v do not add up", counts)
	}
}

// awayFromWindowEdge waits, when Redis's clock is within 30 s of the end of a fixed window of
// this length, until the next window has begun: attempts that straddle two windows are
// counted in each, up to twice the limit (the fixed window's known edge), which the parallel
// tests' "never more than the limit" does not allow for.
func awayFromWindowEdge(t *testing.T, s *store.Store, window time.Duration) {
	t.Helper()
	tm, err := s.Client.Do(context.Background(), s.Client.B().Time().Build()).AsStrSlice()
	if err != nil || len(tm) != 2 {
		t.Fatalf("TIME: %v %v", tm, err)
	}
	sec, _ := strconv.ParseInt(tm[0], 10, 64)
	usec, _ := strconv.ParseInt(tm[1], 10, 64)
	now := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
	if left := window - now%window; left < 30*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
}
