package sessionstore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A session's idle window is the one it was created with: a hash without idleTimeoutMs has
// ImplicitIdle (30 min, a constant the repository applies, never the gateway's configured
// default, which the repository does not even know), one with another timeout stores it. The
// idle deadline reported and the refresh decision follow it on the cached path and the
// script path alike. (Before, an absent field meant "the configured default of the moment":
// a later change of GATEWAY_SESSION_IDLE_TIMEOUT moved every issued session's window.)
func TestSessionIdleWindowIsTheSessions(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		creator := newSessEnv(t, s, prefix, nil)
		implicit := creator.create("", "acme", "alice", ImplicitIdle, 12*time.Hour)
		custom := creator.create("", "acme", "bob", 2*time.Hour, 12*time.Hour)
		if got := creator.sessGet(implicit, fieldIdleTimeout); got != "" {
			t.Fatalf("a 30-minute session stored idleTimeoutMs=%q", got)
		}
		if got := creator.sessGet(custom, fieldIdleTimeout); got != "7200000" {
			t.Fatalf("a 2-hour session stored idleTimeoutMs=%q, want 7200000", got)
		}
		for _, cacheTTL := range []time.Duration{0, time.Minute} {
			reader := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = cacheTTL })
			for _, c := range []struct {
				ref  session.Ref
				idle time.Duration
			}{{implicit, ImplicitIdle}, {custom, 2 * time.Hour}} {
				ac, err := reader.r.Authorize(ctx, c.ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				if err != nil {
					t.Fatalf("cache %v: %v", cacheTTL, err)
				}
				if ac.Refreshed {
					t.Fatalf("cache %v: a fresh session was refreshed", cacheTTL)
				}
				// The idle deadline is lastSeen (= createdAt) + the session's own timeout.
				want := ac.CreatedAt.Add(c.idle)
				if d := ac.IdleExpiresAt.Sub(want); d < -2*time.Second || d > 2*time.Second {
					t.Fatalf("cache %v: idle deadline %v, want %v (the session's %v)", cacheTTL, ac.IdleExpiresAt, want, c.idle)
				}
			}
		}
	})
}
