package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// retryWindow is the longest a request may keep failing while a slot moves: a caller that
// retries (as rueidis follows MOVED/ASK inside the gateway) is served again within it.
// Multi-key scripts of a slot being migrated are refused with TRYAGAIN (503) until the
// migration ends, so this also bounds how long moving one user's slot may take.
const retryWindow = 2 * time.Second

// One user's sessions and device index share the user's hash tag, so they live in one slot (in
// the per-user layout the slot holds one key of the user, the user's hash).
// That slot is moved to another master (IMPORTING/MIGRATING, MIGRATE in batches of 3 keys,
// SETSLOT NODE on every master) while clients authorize and read those sessions, create new
// ones and revoke others. Every request eventually succeeds, only ever failing with a 503
// problem and for less than the retry window; no read sees a session missing; afterwards every
// session is intact and in the device list, revoked sessions stay revoked (and out of the
// list), and every key of the slot lives on the new owner. (The per-session layout, whose index
// and sessions sit on different nodes for a while; TestSlotMigrationDeviceList runs both.)
func TestSlotMigrationUnderLoad(t *testing.T) {
	t.Parallel()
	migrateUnderLoad(t, false, "per-session")
}

// The same migration with the device list (GET /v1/users/{userId}/sessions) read during it:
// every list answers 200 or a 503 problem and holds every session acknowledged before it
// began, and the device index is whole afterwards.
func TestSlotMigrationDeviceList(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"per-user", "per-session"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			migrateUnderLoad(t, true, layout)
		})
	}
}

func migrateUnderLoad(t *testing.T, listDuring bool, layout string) {
	cl := testredis.StartCluster(t)
	g := startGatewayWith(t, cl.URL(), 500*time.Millisecond, func(c *config.Config) { c.SessionLayout = layout })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// 20 sessions kept to the end and 12 to be revoked during the load; the user's bound is 50.
	const tenant, user, initial, throwaway = "t-migrate", "user-migrating", 20, 12
	bearer := g.bearer(tenant, "sessions:read", "sessions:write")
	st := &sessionState{}
	var pool []gwSession
	for i := range initial + throwaway {
		s, _, err := g.createSession(bearer, user)
		if err != nil {
			t.Fatal(err)
		}
		if i < initial {
			st.add(s)
		} else {
			pool = append(pool, s)
		}
	}
	m := g.planMigration(ctx, t, cl, st.live()[0], initial+throwaway)

	l := newLoad(t)
	ops := []string{"authorize", "get session", "create session", "revoke session"}
	if listDuring {
		ops = append(ops, "list sessions")
	}
	for w := range 2 {
		l.spawn(func() { sessionReader(g, l, st, bearer, user, uint64(w), listDuring) })
	}
	// The writers act when the test asks (at most one request waiting each), so each state of
	// the migration sees a create and a revoke, and the user's 50 sessions bound is never hit.
	create, revoke := make(chan struct{}, 1), make(chan gwSession, 1)
	l.spawn(func() { sessionCreator(g, l, st, bearer, user, create) })
	l.spawn(func() { sessionRevoker(g, l, st, bearer, revoke) })
	nudge := func() {
		select {
		case create <- struct{}{}:
		default:
		}
		if len(pool) > 0 {
			select {
			case revoke <- pool[0]:
				pool = pool[1:]
			default:
			}
		}
	}
	nudge()
	l.waitEach(t, 20*time.Second, false, ops...)

	// Every batch is followed by at least one attempt of every kind of request.
	start := time.Now()
	n, err := m.run(ctx, cl, func(int) {
		nudge()
		l.waitEach(t, 20*time.Second, false, ops...)
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("migrate slot %d from node %d to %d: %v", m.Slot, m.From, m.To, err)
	}
	nudge()
	l.waitEach(t, 20*time.Second, true, ops...)
	l.halt()
	l.check(t)
	l.mu.Lock()
	t.Logf("slot %d moved from node %d to %d: %d keys in %v; %d requests, %d answered 503 %v; longest failure run %v (%s)",
		m.Slot, m.From, m.To, n, took.Round(time.Millisecond), l.attempts.Load(), l.unavailable.Load(), l.refusals,
		l.longest.Round(time.Millisecond), l.longestOp)
	if l.longest > retryWindow {
		t.Errorf("a request kept failing for %v (%s), longer than the %v retry window", l.longest, l.longestOp, retryWindow)
	}
	// The per-user layout keeps the user in one key and declares it alone: Redis serves every
	// request on the old owner until the key moves, on the new one (ASK) after.
	if g.perUser() && l.unavailable.Load() > 0 {
		t.Errorf("%d requests answered 503 while the user's hash moved (%v), want none", l.unavailable.Load(), l.refusals)
	}
	l.mu.Unlock()
	g.checkMoved(ctx, t, cl, m, bearer, user, st)
}

// sessionMigration is a planned move of one user's slot.
type sessionMigration struct {
	testredis.Migration
	indexKey string
	moved    int
}

// planMigration finds the slot of s's user (which must hold want sessions and the device
// index, or in the per-user layout the user's hash alone), its owner, and plans the move to the
// next node: sessions first, the device index once half of them have moved, so index and
// sessions sit on different nodes for a while.
func (g *gateway) planMigration(ctx context.Context, t *testing.T, cl *testredis.Cluster, s gwSession, want int) *sessionMigration {
	t.Helper()
	indexKey, _ := g.sessionKeys(t, s)
	slot, err := cl.KeySlot(ctx, indexKey)
	if err != nil {
		t.Fatal(err)
	}
	from, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	// (with session events on, the per-session layout's event outbox is a key of the slot until
	// the relay has emptied it)
	keys, what := int64(want)+1, fmt.Sprintf("%d sessions + the device index", want)
	if g.perUser() {
		keys, what = 1, "the user's hash"
	}
	pollUntil(t, 15*time.Second, fmt.Sprintf("slot %d on node %d holding %s alone", slot, from, what), func() bool {
		n, err := cl.CountKeysInSlot(ctx, from, slot)
		return err == nil && n == keys
	})
	m := &sessionMigration{indexKey: indexKey}
	m.Migration = testredis.Migration{Slot: slot, From: from, To: (from + 1) % len(cl.Nodes), Batch: 3,
		Order: func(left []string) []string {
			rest := slices.DeleteFunc(slices.Clone(left), func(k string) bool { return k == indexKey })
			switch {
			case len(rest) == len(left): // the index has moved
				return left
			case m.moved < want/2 && len(rest) > 0:
				return rest
			default:
				return append([]string{indexKey}, rest...)
			}
		},
	}
	return m
}

// run migrates as planned, tracking how many keys have moved for Order.
func (m *sessionMigration) run(ctx context.Context, cl *testredis.Cluster, after func(moved int)) (int, error) {
	mig := m.Migration
	mig.After = func(n int) {
		m.moved = n
		if after != nil {
			after(n)
		}
	}
	return cl.Migrate(ctx, mig)
}

// checkMoved asserts nothing was lost: every live session is whole and authorizes, the device
// list is exactly the live sessions, revoked sessions stay revoked, and the slot's keys are all
// on the new owner.
func (g *gateway) checkMoved(ctx context.Context, t *testing.T, cl *testredis.Cluster, m *sessionMigration,
	bearer, user string, st *sessionState) {
	t.Helper()
	live, revoked := st.live(), st.revokedList()
	for _, s := range live {
		if _, err := g.getSession(bearer, s); err != nil {
			t.Error(err)
		}
		if _, err := g.authorize(s); err != nil {
			t.Error(err)
		}
	}
	ids, _, err := g.listSessions(bearer, user)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for _, s := range live {
		if !ids[s.ID] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d live sessions are missing from the device list after the migration", missing, len(live))
	}
	for _, s := range revoked {
		if r := g.do("GET", "/v1/sessions/"+s.ID, nil, "Authorization", bearer); r.status != http.StatusNotFound {
			t.Errorf("revoked session %s: get answered %s", s.ID, r)
		}
		if r := g.do("GET", "/v1/authorize", nil, "X-Session-Token", s.Token); r.status != http.StatusUnauthorized {
			t.Errorf("revoked session %s: authorize answered %s", s.ID, r)
		}
		if ids[s.ID] {
			t.Errorf("revoked session %s is in the device list", s.ID)
		}
	}
	if owner, err := cl.Owner(ctx, m.Slot); err != nil || owner != m.To {
		t.Errorf("slot %d owner = node %d (%v), want %d", m.Slot, owner, err, m.To)
	}
	if n, err := cl.CountKeysInSlot(ctx, m.From, m.Slot); err != nil || n != 0 {
		t.Errorf("the old owner still holds %d keys of slot %d (%v)", n, m.Slot, err)
	}
	onNew, err := cl.Do(ctx, m.To, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(m.Slot), "100000").AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(live) > 0 && !g.perUser() && !slices.Contains(onNew, m.indexKey) {
		t.Errorf("the device index is not on the new owner")
	}
	for _, s := range live {
		if _, k := g.sessionKeys(t, s); !slices.Contains(onNew, k) {
			t.Errorf("session %s: its key is not on the new owner", s.ID)
		}
	}
	t.Logf("%d live sessions checked, %d revoked; %d keys of the slot on the new owner", len(live), len(revoked), len(onNew))
}

// A user's sessions are revoked all at once (DELETE /v1/users/{userId}/sessions) while their
// slot is half migrated: with the device index still on the old owner and half the sessions
// on the new one, or with the index on the new owner and some sessions still on the old one.
// The call may be refused with a 503 problem (it is then retried after the migration), but
// once it has answered 200 no session of the user authorizes any more.
func TestSlotMigrationRevokeAll(t *testing.T) {
	t.Parallel()
	const count = 12 // with batches of 3: the index moves in the third batch
	for _, tc := range []struct {
		name   string
		layout string
		after  int // keys moved when revoke-all is sent
		// replicas: every master has a replica behind a slow replication link, so a 200
		// means the importing node's replica acknowledged the deletion (WAIT sent after ASK).
		replicas bool
	}{
		{"index on the old owner", "per-session", count / 2, false},
		{"index on the new owner", "per-session", count/2 + 3, false},
		{"per-user hash on the new owner", "per-user", 1, false},
		{"per-user hash on the new owner, replicas online", "per-user", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rc *testredis.ReplicatedCluster
			var cl *testredis.Cluster
			if tc.replicas {
				rc = testredis.StartReplicatedCluster(t, failoverLinkDelay)
				cl = rc.Cluster
			} else {
				cl = testredis.StartCluster(t)
			}
			g := startGatewayWith(t, cl.URL(), 500*time.Millisecond, func(c *config.Config) {
				c.SessionLayout = tc.layout
				// The replica check below counts the slot's keys: with session events on, a
				// revoke-all keeps the user's hash until its events are relayed.
				c.SessionEvents = "all"
				if tc.replicas {
					c.SessionEvents = "off"
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			const tenant, user = "t-revoke", "user-revoke-all"
			bearer := g.bearer(tenant, "sessions:read", "sessions:write")
			var all []gwSession
			for range count {
				s, _, err := g.createSession(bearer, user)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, s)
			}
			m := g.planMigration(ctx, t, cl, all[0], count)
			revokeAll := func() reply { return g.do("DELETE", "/v1/users/"+user+"/sessions", nil, "Authorization", bearer) }

			var during reply
			if _, err := m.run(ctx, cl, func(moved int) {
				if moved != tc.after {
					return
				}
				if rc != nil {
					// The moved hash reaches the new owner's replica 300 ms late: wait for it,
					// so that the replica holding no key after the 200 shows the deletion.
					pollUntil(t, 10*time.Second, "the moved hash on the new owner's replica", func() bool {
						n, err := rc.Replicas[m.To].Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(m.Slot)).AsInt64()
						return err == nil && n == 1
					})
				}
				during = revokeAll()
				if rc != nil && during.status == http.StatusOK {
					// Durable (GATEWAY_DURABLE_REPLICAS=auto): answered once the importing
					// node's replica has the deletion, 300 ms behind on its link.
					if n, err := rc.Replicas[m.To].Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(m.Slot)).AsInt64(); err != nil || n != 0 {
						t.Errorf("revoke-all answered 200 while the new owner's replica still holds %d keys of the slot (%v): the write was not waited for", n, err)
					}
				}
				if during.status != http.StatusOK {
					if g.perUser() {
						t.Errorf("revoke-all of a user whose hash moved answered %s, want 200 (one key, served on the new owner after ASK)", during)
					}
					if err := during.unavailable(); err != nil {
						t.Errorf("revoke-all during the migration: %v", err)
					}
				}
			}); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			t.Logf("revoke-all while the slot was split answered %s", during)
			if during.status != http.StatusOK {
				if r := revokeAll(); r.status != http.StatusOK {
					t.Fatalf("revoke-all after the migration: %s", r)
				}
			}
			alive := 0
			for _, s := range all {
				if r := g.do("GET", "/v1/authorize", nil, "X-Session-Token", s.Token); r.status != http.StatusUnauthorized {
					alive++
					if alive <= 3 {
						t.Errorf("session %s still authorizes after revoke-all answered 200: %s", s.ID, r)
					}
				}
			}
			if alive > 0 {
				t.Errorf("%d of %d sessions survived revoke-all", alive, count)
			}
			// (the revocations' events are in the slot until the relay has copied them)
			pollUntil(t, 15*time.Second, "the slot empty after revoke-all", func() bool {
				n, err := cl.CountKeysInSlot(ctx, m.To, m.Slot)
				return err == nil && n == 0
			})
		})
	}
}

// The client loops of the load. Each has one role, so reads keep running while the writes of
// a migrating slot are refused (its multi-key scripts get TRYAGAIN until it has moved).

// sessionReader authorizes and reads a random live session and, with list, lists the user's
// devices: every session acknowledged before the list began must be in it.
func sessionReader(g *gateway, l *load, st *sessionState, bearer, user string, seed uint64, list bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i < maxLoops && !l.stopped(); i++ {
		live := st.live()
		s := live[rng.IntN(len(live))]
		l.run("authorize", func() (reply, error) { return g.authorize(s) })
		l.run("get session", func() (reply, error) { return g.getSession(bearer, s) })
		if !list {
			continue
		}
		l.run("list sessions", func() (reply, error) {
			before := st.live()
			ids, r, err := g.listSessions(bearer, user)
			if err != nil {
				return r, err
			}
			var missing []string
			for _, s := range before {
				if !ids[s.ID] {
					missing = append(missing, s.ID)
				}
			}
			if len(missing) > 0 {
				l.violate("list sessions: %d acknowledged live sessions missing (e.g. %s)", len(missing), missing[0])
			}
			return r, nil
		})
	}
}

// sessionCreator creates a session of the user, kept to the end, whenever the test asks.
func sessionCreator(g *gateway, l *load, st *sessionState, bearer, user string, create <-chan struct{}) {
	for {
		select {
		case <-l.stop:
			return
		case <-create:
			l.run("create session", func() (reply, error) {
				s, r, err := g.createSession(bearer, user)
				if err == nil {
					st.add(s)
				}
				return r, err
			})
		}
	}
}

// sessionRevoker revokes the sessions the test hands it, one at a time.
func sessionRevoker(g *gateway, l *load, st *sessionState, bearer string, revoke <-chan gwSession) {
	for {
		select {
		case <-l.stop:
			return
		case s := <-revoke:
			if l.run("revoke session", func() (reply, error) { return g.revokeSession(bearer, s) }) {
				st.revoke(s)
			}
		}
	}
}

// maxLoops bounds every client loop (they normally stop when the test halts them).
const maxLoops = 20000

// sessionState is what the clients know: acknowledged live sessions and revoked ones.
type sessionState struct {
	mu      sync.Mutex
	kept    []gwSession
	revoked []gwSession
}

func (s *sessionState) add(x gwSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = append(s.kept, x)
}

func (s *sessionState) revoke(x gwSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = append(s.revoked, x)
}

func (s *sessionState) live() []gwSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.kept)
}

func (s *sessionState) revokedList() []gwSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.revoked)
}

// sessionKeys are the Redis keys of s's device index and of the key holding s (docs/KEYS.md,
// "Sessions": <prefix>:v1:sessions:{<userTag>} and <prefix>:v1:sess:{<userTag>}:<idPart>, or
// in the per-user layout the user's hash <prefix>:v1:sess:{<userTag>}).
func (g *gateway) sessionKeys(t *testing.T, s gwSession) (index, key string) {
	t.Helper()
	ref := g.sessionRef(t, s)
	if g.perUser() {
		return g.keys.Key("sessions", ref.Tag), sessionstore.UserSessionsKey(g.keys, ref.Tag)
	}
	return g.keys.Key("sessions", ref.Tag), sessionstore.SessionKey(g.keys, ref)
}

func (g *gateway) sessionRef(t *testing.T, s gwSession) session.Ref {
	t.Helper()
	ref, ok := session.ParseID(s.ID)
	if !ok {
		t.Fatalf("session id %q does not parse", s.ID)
	}
	return ref
}

// sessionMarker is where s's existence shows: its key (field ""), or in the per-user layout
// its live marker field in the user's hash.
func (g *gateway) sessionMarker(t *testing.T, s gwSession) (key, field string) {
	t.Helper()
	_, key = g.sessionKeys(t, s)
	if g.perUser() {
		field = g.sessionRef(t, s).Part + ":live"
	}
	return key, field
}

// perUser reports whether the gateway keeps sessions per user (GATEWAY_SESSION_LAYOUT, whose
// default on Redis is per-user).
func (g *gateway) perUser() bool { return g.cfg.SessionLayout != "per-session" }
