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

// eachStore runs fn on every backend, in every layout the backend can host, with the kept copy
// (the memo) off and, where the backend has client-side caching, on: every way the gateway can
// keep sessions. fn sees only what the session service sees.
func eachStore(t *testing.T, fn func(t *testing.T, e *sessEnv)) {
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		for _, l := range []SessionLayout{LayoutPerSession, LayoutPerUser} {
			if Hosts(s.Caps, l) != nil {
				continue
			}
			for _, cacheTTL := range []time.Duration{0, time.Minute} {
				if cacheTTL > 0 && !s.Caps.ClientCache {
					continue
				}
				name := string(l) + map[bool]string{false: "/uncached", true: "/cached"}[cacheTTL > 0]
				t.Run(name, func(t *testing.T) {
					fn(t, newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout, o.CacheTTL, o.MaxPerUser = l, cacheTTL, 3 }))
				})
			}
		}
	})
}

// eachPerUser runs fn on every backend that can host the per-user layout, in that layout: the
// tests of what only that layout stores.
func eachPerUser(t *testing.T, fn func(t *testing.T, b testredis.Backend, s *store.Store, e *sessEnv)) {
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if err := Hosts(s.Caps, LayoutPerUser); err != nil {
			t.Skip(err)
		}
		fn(t, b, s, newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout = LayoutPerUser }))
	})
}

// The contract of the session store (internal/sessions.Store), the same in every layout, on
// every backend, with and without the kept copy: what a create, the reads, the transitions and
// the revocations answer.
func TestSessionStoreContract(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *sessEnv) {
		ctx := context.Background()
		fresh := session.AuthorizeOptions{VerifierMAC: testMAC, View: true, Fresh: true}
		hot := session.AuthorizeOptions{VerifierMAC: testMAC, Fresh: true}
		tag := sessRand(t, 9)
		ref := sessRef(t, tag)
		created, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme", DeviceLabel: "laptop",
			Groups: []string{"staff"}, Idle: 30 * time.Minute, Absolute: 24 * time.Hour})
		if err != nil || created.Status != session.Active || created.AuthLevel != session.LevelBasic || len(created.Evicted) != 0 {
			t.Fatalf("create: %+v %v", created, err)
		}

		// Reads: the full view, the hot fields, another tenant's and an unknown reference.
		for _, o := range []session.AuthorizeOptions{{VerifierMAC: testMAC, View: true}, {VerifierMAC: testMAC}, fresh, hot} {
			ac, err := e.r.Authorize(ctx, ref, o)
			if err != nil || ac.UserID != "alice" || ac.TenantID != "acme" || ac.AuthLevel != session.LevelBasic ||
				ac.Partial == o.View || !slices.Equal(ac.Groups, []string{"staff"}) || ac.IdleExpiresAt.IsZero() {
				t.Fatalf("authorize %+v: %+v %v", o, ac, err)
			}
		}
		if _, err := e.r.Authorize(ctx, sessRef(t, tag), session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("unknown reference: %v", err)
		}
		// Another verifier is refused on every read, as a wrong verifier (not a miss: nothing
		// remembers the session as absent, so its own token still works after).
		for _, o := range []session.AuthorizeOptions{{VerifierMAC: macOf("other"), View: true}, {VerifierMAC: macOf("other")},
			{VerifierMAC: macOf("other"), Fresh: true}, {}} {
			if ac, err := e.r.Authorize(ctx, ref, o); !errors.Is(err, session.ErrWrongVerifier) || errors.Is(err, apperr.NotFound) {
				t.Fatalf("another verifier %+v: %+v %v", o, ac, err)
			}
		}
		if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC}); err != nil {
			t.Fatalf("the session's own verifier after refusals: %v", err)
		}
		got, err := e.r.Get(ctx, ref, "acme")
		if err != nil || got.DeviceLabel != "laptop" || got.Status != session.Active || got.ChallengeLive {
			t.Fatalf("get: %+v %v", got, err)
		}
		if _, err := e.r.Get(ctx, ref, "globex"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get by another tenant: %v", err)
		}

		// Groups are replaced and seen by the next read.
		if g, err := e.r.SetGroups(ctx, ref, "acme", []string{"admins", "staff"}); err != nil || !slices.Equal(g.Groups, []string{"admins", "staff"}) {
			t.Fatalf("set groups: %+v %v", g, err)
		}
		if ac, err := e.r.Authorize(ctx, ref, hot); err != nil || !slices.Equal(ac.Groups, []string{"admins", "staff"}) {
			t.Fatalf("groups after the change: %+v %v", ac, err)
		}

		// Rotation: the reference is kept, the old verifier stops working, the deadline is kept.
		rotated, err := e.r.Rotate(ctx, ref, "acme", macOf("rotated"))
		if err != nil || rotated.Ref != ref || !rotated.AbsoluteExpiresAt.Equal(created.AbsoluteExpiresAt) {
			t.Fatalf("rotate: %+v %v (created %v)", rotated, err, created.AbsoluteExpiresAt)
		}
		if _, err := e.r.Authorize(ctx, ref, fresh); !errors.Is(err, session.ErrWrongVerifier) {
			t.Fatalf("the old verifier after rotation: %v", err)
		}
		fresh.VerifierMAC, hot.VerifierMAC = macOf("rotated"), macOf("rotated")
		if ac, err := e.r.Authorize(ctx, ref, fresh); err != nil || ac.LastRotatedAt.IsZero() {
			t.Fatalf("the new verifier after rotation: %+v %v", ac, err)
		}
		if _, err := e.r.Rotate(ctx, ref, "globex", macOf("x")); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("rotate by another tenant: %v", err)
		}

		// MFA: no challenge, a wrong code (counted), the right one (step-up: a new verifier, the
		// same reference), the same again (a replay: its challenge is used).
		verify := func(id, mac string, to string) *session.VerifyResult {
			t.Helper()
			res, err := e.r.Verify(ctx, session.MFAVerification{Ref: ref, Tenant: "acme", ChallengeID: id, CodeMAC: mac, VerifierMAC: to})
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			return res
		}
		if res := verify("none", "m", macOf("x")); res.Outcome != session.VerifyNoChallenge || res.Attempts.Count != 1 {
			t.Fatalf("verify without a challenge: %+v", res)
		}
		id := sessRand(t, 16)
		if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "acme", ID: id, CodeMAC: "right", TTL: time.Minute}); err != nil {
			t.Fatalf("challenge: %v", err)
		}
		if got, err := e.r.Get(ctx, ref, "acme"); err != nil || !got.ChallengeLive || got.Status != session.MFARequired {
			t.Fatalf("get with a live challenge: %+v %v", got, err)
		}
		if res := verify(id, "wrong", macOf("x")); res.Outcome != session.VerifyWrongCode || res.FailedAttempts != 1 || res.Attempts.Count != 2 {
			t.Fatalf("wrong code: %+v", res)
		}
		res := verify(id, "right", macOf("stepped"))
		if res.Outcome != session.VerifyOK || res.Session.Ref != ref || res.Session.AuthLevel != session.LevelMFA || !res.Attempts.Allowed {
			t.Fatalf("right code: %+v", res)
		}
		if _, err := e.r.Authorize(ctx, ref, fresh); !errors.Is(err, session.ErrWrongVerifier) {
			t.Fatalf("the verifier before step-up: %v", err)
		}
		fresh.VerifierMAC = macOf("stepped")
		if ac, err := e.r.Authorize(ctx, ref, fresh); err != nil || ac.AuthLevel != session.LevelMFA || ac.Status != session.MFAVerified {
			t.Fatalf("after step-up: %+v %v", ac, err)
		}
		if res := verify(id, "right", macOf("replayed")); res.Outcome != session.VerifyNoChallenge {
			t.Fatalf("a replayed verify: %+v", res)
		}
		if _, err := e.r.Authorize(ctx, ref, fresh); err != nil {
			t.Fatalf("the step-up's verifier after a replayed verify: %v", err)
		}

		// The cap (3): a fourth session evicts the least recently used one.
		second := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		third := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		fourth := sessRef(t, tag)
		c, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: fourth, UserID: "alice", TenantID: "acme", Idle: time.Hour, Absolute: 2 * time.Hour})
		if err != nil || len(c.Evicted) != 1 {
			t.Fatalf("create at the cap: %+v %v", c, err)
		}
		list, err := e.r.List(ctx, tag, "acme")
		if err != nil || len(list) != 3 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if other, err := e.r.List(ctx, tag, "globex"); err != nil || len(other) != 0 {
			t.Fatalf("list by another tenant: %+v %v", other, err)
		}

		// Revocations: one, twice (idempotent), then every other one.
		if ok, err := e.r.Revoke(ctx, third, "globex"); ok || err != nil {
			t.Fatalf("revoke by another tenant: %v %v", ok, err)
		}
		survivor := fourth
		if c.Evicted[0] == fourth {
			t.Fatalf("the new session was evicted")
		}
		for _, r := range []session.Ref{second, third, ref} {
			if r != c.Evicted[0] {
				survivor = r
				break
			}
		}
		if ok, err := e.r.Revoke(ctx, survivor, "acme"); !ok || err != nil {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if ok, err := e.r.Revoke(ctx, survivor, "acme"); ok || err != nil {
			t.Fatalf("revoke again: %v %v", ok, err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, fourth.Part); n != 1 || err != nil {
			t.Fatalf("revoke all but one: %d %v", n, err)
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 1 || list[0].Ref != fourth {
			t.Fatalf("list after revoke-all: %+v %v", list, err)
		}
		if _, err := e.r.Authorize(ctx, survivor, fresh); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("a revoked session: %v", err)
		}
	})
}
