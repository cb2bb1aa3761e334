package sessionstore

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

// The idle window ends a session nobody uses; the absolute deadline ends one that is used.
func TestSessionIdleAndAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		// Refresh under half the window, so a loaded test machine's scheduling delays (calls are
		// 200ms apart) cannot let the busy session lapse.
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.RefreshFraction = 0.5 })
		ctx := context.Background()
		idleRef := e.create("", "acme", "idle", 2*time.Second, time.Hour)

		start := time.Now()
		absRef := e.create("", "acme", "busy", 2*time.Second, 3*time.Second)
		refreshed := 0
		for time.Since(start) < 2600*time.Millisecond {
			ac, err := e.r.Authorize(ctx, absRef, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if err != nil {
				t.Fatalf("busy session refused after %v: %v", time.Since(start), err)
			}
			if ac.Refreshed {
				refreshed++
			}
			if ac.IdleExpiresAt.After(ac.AbsoluteExpiresAt) {
				t.Fatalf("idle expiry %v past the absolute deadline %v", ac.IdleExpiresAt, ac.AbsoluteExpiresAt)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if refreshed == 0 {
			t.Fatal("the idle window never slid")
		}
		if _, err := e.r.Authorize(ctx, idleRef, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("idle session still alive: %v", err)
		}
		time.Sleep(time.Until(start.Add(3300 * time.Millisecond)))
		if _, err := e.r.Authorize(ctx, absRef, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("session alive past its absolute deadline: %v", err)
		}
		if list, err := e.r.List(ctx, absRef.Tag, "acme"); err != nil || len(list) != 0 {
			t.Fatalf("expired session listed: %+v %v", list, err)
		}
	})
}

// The hot path is one command; it writes only when less than the fraction of the idle window
// is left, and never extends past the absolute deadline.
func TestSessionRefreshOnlyUnderThreshold(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", 10*time.Second, time.Hour)
		// The last use as readers answer it (per user an uncapped refresh stores none: the
		// marker's expiry tells it, TestSessionRefreshDerivesLastSeen).
		lastSeen := func(s *session.Session) string { return strconv.FormatInt(s.LastSeenAt.UnixMilli(), 10) }
		got, err := e.r.Get(ctx, ref, "acme")
		if err != nil {
			t.Fatal(err)
		}
		seen := lastSeen(got)
		time.Sleep(5 * time.Millisecond)

		setPTTL := func(ms int64) {
			e.sessExpire(ref, ms)
		}
		steps := []struct {
			name        string
			pttl        int64 // 0: leave as is
			wantRefresh bool
		}{
			{"fresh", 0, false},
			{"half left", 5000, false},
			{"just above 25%", 2700, false},
			{"under 25%", 2000, true},
			{"fresh again", 0, false},
		}
		for _, st := range steps {
			if st.pttl > 0 {
				setPTTL(st.pttl)
			}
			before := e.sessPTTL(ref)
			e.count.Reset()
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if cmds := e.count.Reset(); len(cmds) != 1 || cmds[0] != "EVALSHA" {
				t.Fatalf("%s: commands %v, want one EVALSHA", st.name, cmds)
			}
			after := e.sessPTTL(ref)
			now := lastSeen(&ac.Session)
			if ac.Refreshed != st.wantRefresh {
				t.Fatalf("%s: refreshed = %v", st.name, ac.Refreshed)
			}
			if st.wantRefresh {
				if after < 9000 || now == seen {
					t.Fatalf("%s: pttl %d, lastSeen %s→%s", st.name, after, seen, now)
				}
				// Per user: every field of the session got the new idle deadline (a field left
				// behind would vanish before the session).
				for name, ttl := range e.sessFieldTTLs(ref) {
					if ttl < after-1000 || ttl > after {
						t.Fatalf("%s: %s expires in %d ms, the session in %d", st.name, name, ttl, after)
					}
				}
				seen = now
			} else if after > before || now != seen {
				t.Fatalf("%s: wrote without need: pttl %d→%d, lastSeen %s→%s", st.name, before, after, seen, now)
			}
		}
		if n := e.metric("hashgate_repo_events", sessAttr("event", "ttl_refresh")); n != 1 {
			t.Fatalf("ttl_refresh events = %d, want 1", n)
		}

		// Never past the absolute deadline: 1.5s left, idle 10s.
		abs := e.serverMs() + 1500
		e.sessSet(ref, fieldAbsoluteExpires, strconv.FormatInt(abs, 10))
		setPTTL(300)
		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		if err != nil || !ac.Refreshed {
			t.Fatalf("near the deadline: %+v %v", ac, err)
		}
		if p := e.sessPTTL(ref); p > 1500 || p < 1000 {
			t.Fatalf("pttl %d extends past the absolute deadline", p)
		}
	})
}
