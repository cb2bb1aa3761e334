package sessions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// absentEnv is a session service as the gateway builds it by default (the hot path's cache on,
// default sessions options otherwise) over s, whose Redis calls rec counts.
func absentEnv(t *testing.T, s *store.Store, prefix string, h *keyhash.Hasher) (*Service, *sessionstore.Sessions, *testredis.Recorder) {
	t.Helper()
	rec := testredis.NewRecorder(s.Client)
	cp := *s
	cp.Client = rec
	r, err := sessionstore.NewSessions(&cp, repo.Keys{Prefix: prefix}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
		MaxPerUser: 50, CacheTTL: 30 * time.Second, MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(r, h, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour, ChallengeTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return svc, r, rec
}

// unknownToken is a well-formed token of the user with tag that no session has (under svc's
// key), its reference and its verifier's MAC.
func unknownToken(t *testing.T, svc *Service, tag string) (string, session.Ref, string) {
	t.Helper()
	tok, ref, mac, err := newToken(svc.hasher, session.Ref{Tag: tag})
	if err != nil {
		t.Fatal(err)
	}
	return tok, ref, mac
}

// TestUnknownTokensCostOneReadEach: 200 authentications of 10 well-formed tokens no session has
// (20 each, as a scanner or a client holding a revoked token repeats them) read Redis once per
// token within the absent cache's TTL, not 200 times; each is still refused.
func TestUnknownTokensCostOneReadEach(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		h, _, err := keyhash.Generate()
		if err != nil {
			t.Fatal(err)
		}
		svc, _, rec := absentEnv(t, s, prefix, h)
		ctx := context.Background()
		const distinct, repeats = 10, 20
		tokens := make([]string, distinct)
		for i := range tokens {
			tokens[i], _, _ = unknownToken(t, svc, svc.userTag("acme", "user-"+string(rune('a'+i))))
		}
		authenticate := func() {
			for _, tok := range tokens {
				if _, err := svc.Authenticate(ctx, tok); !isKind(err, apperr.InvalidCredentials) {
					t.Fatalf("unknown token: %v, want invalid credentials", err)
				}
			}
		}
		// The first authentication of each reads Redis: one round trip (one more on the embedded
		// store, loading the script).
		rec.Reset()
		authenticate()
		if trips := rec.Trips(); trips > distinct+1 {
			t.Errorf("the first authentication of %d unknown tokens made %d round trips (%v ...), want at most %d",
				distinct, trips, first(rec.Names(), 12), distinct+1)
		}
		rec.Reset()
		for range repeats - 1 {
			authenticate()
		}
		if trips := rec.Trips(); trips != 0 {
			t.Errorf("%d more authentications of the same %d unknown tokens made %d round trips to Redis (%v ...), want none",
				distinct*(repeats-1), distinct, trips, first(rec.Names(), 12))
		}
	})
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// TestAbsentCacheNeverHidesASession: a token just refused as unknown works at once when a
// session is then created for its reference, or a session rotated to it — on this gateway at
// once, on another one as soon as Redis's invalidation push lands (well within the cache's TTL).
func TestAbsentCacheNeverHidesASession(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		h, _, err := keyhash.Generate()
		if err != nil {
			t.Fatal(err)
		}
		svc, r, _ := absentEnv(t, s, prefix, h)
		ctx := context.Background()
		tag := svc.userTag("acme", "alice")
		record := func(ref session.Ref, mac string) session.Record {
			return session.Record{Ref: ref, VerifierMAC: mac, UserID: "alice", TenantID: "acme", Status: session.Active,
				AuthLevel: session.LevelBasic, Idle: 30 * time.Minute, Absolute: time.Hour}
		}
		refused := func(svc *Service, tok string) {
			t.Helper()
			if _, err := svc.Authenticate(ctx, tok); !isKind(err, apperr.InvalidCredentials) {
				t.Fatalf("unknown token: %v, want invalid credentials", err)
			}
		}

		// Created on this gateway for a reference it has just found missing.
		tok, ref, mac := unknownToken(t, svc, tag)
		refused(svc, tok)
		if _, err := r.Create(ctx, record(ref, mac)); err != nil {
			t.Fatalf("create: %v", err)
		}
		if p, err := svc.Authenticate(ctx, tok); err != nil || p.Subject != "alice" {
			t.Fatalf("a session created for a reference just found missing: %v %+v, want alice at once", err, p)
		}

		// A token of the live session with another verifier is refused, again and again, and
		// never remembered as a miss: the session's own token still works at once.
		wrong := tok[:verifierAt] + strings.Repeat("A", verifierLen)
		for range 3 {
			refused(svc, wrong)
		}
		if p, err := svc.Authenticate(ctx, tok); err != nil || p.Subject != "alice" {
			t.Fatalf("the session's own token after refused verifiers: %v %+v, want alice", err, p)
		}

		// Created on another gateway: this one learns of it from Redis's invalidation push.
		if !s.Caps.ClientCache {
			return // no tracking, no push: the random 108-bit reference is what keeps a miss safe
		}
		other, _, _ := absentEnv(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, h)
		far, farRef, farMAC := unknownToken(t, svc, tag)
		refused(svc, far)
		if _, err := other.store.Create(ctx, record(farRef, farMAC)); err != nil {
			t.Fatalf("create on the other gateway: %v", err)
		}
		start := time.Now()
		for {
			_, err := svc.Authenticate(ctx, far)
			if err == nil {
				break
			}
			if !errors.Is(err, apperr.InvalidCredentials) && !isKind(err, apperr.InvalidCredentials) {
				t.Fatal(err)
			}
			if time.Since(start) > time.Second {
				t.Fatal("a session another gateway created for a reference just found missing was still refused after 1s")
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// TestAbsentCacheKeepsNoMissACreateOvertook: a create that lands while a read that found
// nothing is still on its way back leaves no remembered miss: the next request finds the
// session. (The embedded store: every read is one script call, which the recorder's After
// hook runs the create behind.)
func TestAbsentCacheKeepsNoMissACreateOvertook(t *testing.T) {
	t.Parallel()
	b := testredis.Named(t, "embedded")
	s := testredis.Open(t, b)
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	svc, r, rec := absentEnv(t, s, testredis.Prefix(t), h)
	ctx := context.Background()
	tok, ref, mac := unknownToken(t, svc, svc.userTag("acme", "alice"))
	warm, _, _ := unknownToken(t, svc, svc.userTag("acme", "bob"))
	_, _ = svc.Authenticate(ctx, warm) // loads the script: the read below is one EVALSHA
	created := false
	rec.After = func(args []string) {
		if created || len(args) == 0 || args[0] != "EVALSHA" {
			return
		}
		created = true // (before the create: its own script call comes back here)
		if _, err := r.Create(ctx, session.Record{Ref: ref, VerifierMAC: mac, UserID: "alice", TenantID: "acme", Status: session.Active,
			AuthLevel: session.LevelBasic, Idle: 30 * time.Minute, Absolute: time.Hour}); err != nil {
			t.Errorf("create: %v", err)
		}
	}
	if _, err := svc.Authenticate(ctx, tok); !isKind(err, apperr.InvalidCredentials) {
		t.Fatalf("the read that the create overtook: %v, want invalid credentials", err)
	}
	if !created {
		t.Fatal("the create did not run behind the read")
	}
	if p, err := svc.Authenticate(ctx, tok); err != nil || p.Subject != "alice" {
		t.Fatalf("after the create: %v %+v, want alice", err, p)
	}
}
