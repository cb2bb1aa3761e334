package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Authorize with Fresh reads Redis even when the session is cached: a change made through another
// client is seen by the very next call, before any invalidation push could matter, and the
// answer is not a cache hit. (The session service calls it for the sessions it just changed:
// internal/sessions, TestSessionWritesSeenAtOnceDespiteCache.)
func TestAuthorizeFreshReadsRedis(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side cache on this backend")
		}
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
		other := newSessEnv(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, nil)
		ctx := context.Background()
		for range 10 {
			ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
			for range 3 {
				if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
					t.Fatal(err)
				}
			}
			if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || !ac.CacheHit {
				t.Fatalf("not served from the cache: %+v %v", ac, err)
			}
			if _, err := other.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true, Fresh: true}); err != nil || ac.CacheHit || ac.Status != session.MFARequired {
				t.Fatalf("fresh read: %+v %v, want MFA_REQUIRED read from Redis", ac, err)
			}
			if ok, err := other.r.Revoke(ctx, ref, "acme"); err != nil || !ok {
				t.Fatalf("revoke: %v %v", ok, err)
			}
			if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true, Fresh: true}); !errors.Is(err, apperr.NotFound) {
				t.Fatalf("fresh read after a revoke: %+v %v", ac, err)
			}
		}
	})
}
