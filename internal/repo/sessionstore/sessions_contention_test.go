package sessionstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Revoke-all succeeds while the same user's sessions are created concurrently (issue 11: it
// answered 503 in 3–20% of calls). Eight creators log the user in without pause while revoke-all
// runs again and again; every call must succeed, and once the last one returned no session
// whose create had completed before it began may be left.
func TestSessionRevokeAllUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !b.Real() {
			t.Skip("contention needs a real server's concurrency")
		}
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		var (
			stop    atomic.Bool
			wg      sync.WaitGroup
			mu      sync.Mutex
			created []struct {
				ref session.Ref
				at  time.Time
			}
			createErrs atomic.Int64
		)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					ref := sessRef(t, tag)
					_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme",
						Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
					if err != nil {
						createErrs.Add(1)
						continue
					}
					mu.Lock()
					created = append(created, struct {
						ref session.Ref
						at  time.Time
					}{ref, time.Now()})
					mu.Unlock()
				}
			}()
		}
		const calls = 60
		failed := 0
		var lastStart time.Time
		for range calls {
			lastStart = time.Now()
			if _, err := e.r.RevokeAll(ctx, tag, ""); err != nil {
				if !errors.Is(err, apperr.Unavailable) && !store.IsUnavailable(err) {
					t.Fatalf("revoke-all: %v", err)
				}
				failed++
			}
		}
		stop.Store(true)
		wg.Wait()
		t.Logf("%s: %d of %d revoke-all calls failed under concurrent creates (%d sessions created, %d creates failed)",
			b.Name, failed, calls, len(created), createErrs.Load())
		if failed > 0 {
			t.Errorf("%d of %d revoke-all calls failed (503) while the user's sessions were being created", failed, calls)
		}
		for _, c := range created {
			if !c.at.Before(lastStart) {
				continue
			}
			if _, err := e.r.Authorize(ctx, c.ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
				t.Errorf("session %s created before the last revoke-all began survived it: %v", c.ref.ID(), err)
			}
		}
	})
}

// Revoke-all while the user's sessions are being rotated without pause: once it returns, no
// session that existed when it began is alive under any token, and no rotation succeeds after
// it. Rotation keeps a session's id (and index member), so revoke-all never has to give up in
// either layout.
func TestSessionRevokeAllUnderConcurrentRotations(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !b.Real() {
			t.Skip("contention needs a real server's concurrency")
		}
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		const chains = 4
		var (
			mu      sync.Mutex
			all     []session.Ref
			wg      sync.WaitGroup
			rotated atomic.Int64
			stop    atomic.Bool
			began   atomic.Bool
			revoked atomic.Bool
			running atomic.Int64
		)
		for range chains {
			all = append(all, e.create(tag, "acme", "alice", time.Hour, 2*time.Hour))
		}
		for _, ref := range slices.Clone(all) {
			wg.Add(1)
			running.Add(1)
			go func() {
				defer wg.Done()
				defer running.Add(-1)
				for cur := ref; !stop.Load(); {
					next := cur // (a rotation keeps the reference)
					done := revoked.Load()
					_, err := e.r.Rotate(ctx, cur, "acme", macOf(sessRand(t, 9)))
					switch {
					case errors.Is(err, apperr.NotFound):
						if !began.Load() {
							t.Errorf("rotate before revoke-all: %v", err)
						}
						return
					case err != nil:
						continue // unavailable: try again
					case done:
						t.Errorf("a rotation began after revoke-all returned and succeeded")
					}
					mu.Lock()
					all = append(all, next)
					mu.Unlock()
					rotated.Add(1)
					cur = next
				}
			}()
		}
		for rotated.Load() < chains && running.Load() > 0 {
			time.Sleep(time.Millisecond)
		}
		began.Store(true)
		n, err := e.r.RevokeAll(ctx, tag, "")
		revoked.Store(true)
		if err != nil || n < 1 {
			t.Fatalf("revoke-all under rotations: %d %v", n, err)
		}
		stop.Store(true)
		wg.Wait()
		t.Logf("%s: %d rotations, revoke-all ended %d sessions", b.Name, rotated.Load(), n)
		for _, ref := range all {
			if e.sessAlive(ref) {
				t.Errorf("session %s survived revoke-all", ref.ID())
			}
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 0 {
			t.Fatalf("list after revoke-all: %+v %v", list, err)
		}
	})
}
