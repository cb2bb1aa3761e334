package sessionstore

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// List prunes an index member only when its session is confirmed gone; the prune script
// re-checks each key it is given and never drops a live session's member. (The per-session
// layout's index, forced where per-user is the default; the per-user layout has nothing to
// prune: TestSessionListOrderExpiryCorrupt.)
func TestSessionListPrunesOnlyGoneMembers(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout = LayoutPerSession })
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		b := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		gone := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		if err := e.do(e.s.Client.B().Del().Key(e.r.sessionKey(gone)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		// Handed a live member, the prune script keeps it.
		if n, err := e.r.prune(ctx, tag, []string{a.Part}); err != nil || n != 0 {
			t.Fatalf("prune of a live member = %d %v", n, err)
		}
		list, err := e.r.List(ctx, tag, "acme")
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		got := []session.Ref{list[0].Ref, list[1].Ref}
		if !slices.Contains(got, a) || !slices.Contains(got, b) {
			t.Fatalf("listed %v, want %v and %v", got, a, b)
		}
		members, err := e.r.members(ctx, tag, -1)
		if err != nil || len(members) != 2 || slices.Contains(members, gone.Part) {
			t.Fatalf("index after list = %v %v, want the two live members", members, err)
		}
		if empty, err := e.r.List(ctx, sessRand(t, 9), "acme"); err != nil || empty == nil || len(empty) != 0 {
			t.Fatalf("list of a user without sessions = %#v %v, want an empty list", empty, err)
		}
		e.everyKeyHasTTL()
	})
}

// Create counts the index's members for the per-user bound; when the index is full it drops the
// members whose session ended before their absolute deadline in the same script, so the index
// never holds more than MaxPerUser members (here with the refuse policy: no eviction). (The
// per-session layout's index, forced where per-user is the default; in the per-user layout an
// ended session's fields are gone with their TTL: TestSessionCreateBound.)
func TestSessionCreateBoundCountsIndex(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		const limit = 3
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) {
			o.MaxPerUser = limit
			o.LimitPolicy = LimitRefuse
			o.Layout = LayoutPerSession
		})
		ctx := context.Background()
		tag := sessRand(t, 9)
		var refs []session.Ref
		for range limit {
			ref := e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
			refs = append(refs, ref)
		}
		// Two sessions end early (as on an idle timeout); their members stay in the index.
		for _, ref := range refs[:2] {
			if err := e.do(e.s.Client.B().Del().Key(e.r.sessionKey(ref)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			e.create(tag, "acme", "bob", time.Hour, 2*time.Hour)
		}
		_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: sessRef(t, tag), UserID: "bob", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Minute, Absolute: time.Hour})
		if !errors.Is(err, apperr.SessionLimit) || !strings.Contains(err.Error(), "3 live sessions") {
			t.Fatalf("create over the bound: %v", err)
		}
		members, err := e.r.members(ctx, tag, -1)
		if err != nil || len(members) != limit || slices.Contains(members, refs[0].Part) || slices.Contains(members, refs[1].Part) {
			t.Fatalf("index = %v %v, want the %d live members", members, err, limit)
		}
		e.everyKeyHasTTL()
	})
}

// No session script builds a key from ARGV (a key base plus a member): every key a script
// touches is declared in KEYS, which Redis Cluster checks before running it. A key built inside
// a script is refused ("non local key") or, worse, read as missing while its slot migrates.
// The per-user layout's scripts build field names ("<idPart>:<name>") from ARGV: such a line
// says so in its comment ("-- field name").
func TestSessionScriptsBuildNoKeys(t *testing.T) {
	t.Parallel()
	names, err := luaFiles.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	concat := regexp.MustCompile(`ARGV\[[^\]]*\]\s*\.\.|\.\.\s*ARGV\[`)
	checked := 0
	for _, n := range names {
		if !strings.HasPrefix(n.Name(), "session_") {
			continue
		}
		b, err := luaFiles.ReadFile(n.Name())
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			code, comment, _ := strings.Cut(line, "--")
			if concat.MatchString(code) && !strings.Contains(comment, "field name") {
				t.Errorf("%s:%d builds a string from ARGV: %s", n.Name(), i+1, strings.TrimSpace(line))
			}
		}
	}
	if checked < 8 {
		t.Fatalf("checked %d session scripts, want every one", checked)
	}
}

// A user's slot moves to another master of a private cluster (sessions first, the device index
// halfway, in batches of two keys) while the repository is used. At every step: every session
// authorizes; List answers every live session or is refused as unavailable, never a shorter
// list; Create succeeds or is refused as unavailable; RevokeAll, sent while index and sessions
// sit on different nodes, is refused as unavailable having changed nothing, or revokes all.
// Afterwards the list is exact, revoke-all leaves no session and no key of the user. In the
// per-user layout the slot holds one key, the user's hash: the same checks run before it moves
// and after it moved while the slot is still migrating, with a rotation and an MFA challenge
// too, and nothing may be refused: every per-user operation declares the user's hash alone
// (a multi-key script that declares an absent key gets TRYAGAIN for the whole move).
func TestSessionIndexDuringSlotMigration(t *testing.T) {
	t.Parallel()
	for _, v := range sessMigrationVariants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cl, e := v.env(t, nil)
			ctx := context.Background()
			tag := sessRand(t, 9)
			const count = 8
			live, all := map[session.Ref]bool{}, map[session.Ref]bool{}
			for range count {
				ref := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
				live[ref], all[ref] = true, true
			}
			for ref := range live {
				// A pending challenge: in the fallback mode a key of its own, which revoke-all declares.
				if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				break
			}
			index := e.r.devicesKey(tag)
			slot, err := cl.KeySlot(ctx, index)
			if err != nil {
				t.Fatal(err)
			}
			from, err := cl.Owner(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			moved, refused := 0, 0
			mig := e.sessMigration()
			// refusable: an error the layout may answer while the slot is split.
			refusable := func(err error) bool { return mig.split && store.IsUnavailable(err) }
			step := func(n int) {
				t.Helper()
				for ref := range live {
					if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
						t.Errorf("%d keys moved: session %s does not authorize: %v", n, ref.ID(), err)
					}
				}
				list, err := e.r.List(ctx, tag, "acme")
				switch {
				case err != nil && !refusable(err):
					t.Errorf("%d keys moved: list: %v", n, err)
				case err == nil && len(list) != len(live):
					t.Errorf("%d keys moved: list holds %d sessions, want %d", n, len(list), len(live))
				}
				ref := sessRef(t, tag)
				_, err = e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme",
					Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour})
				switch {
				case err == nil:
					live[ref], all[ref] = true, true
				case !refusable(err):
					t.Errorf("%d keys moved: create: %v", n, err)
				}
				for old := range live {
					if !mig.rotate {
						break
					}
					next := old // (a rotation keeps the reference)
					if _, err := e.r.Rotate(ctx, old, "acme", testMAC); err != nil {
						t.Errorf("%d keys moved: rotate: %v", n, err)
						break
					}
					delete(live, old)
					live[next], all[next] = true, true
					if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: next, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
						t.Errorf("%d keys moved: challenge: %v", n, err)
					}
					break
				}
			}
			m := testredis.Migration{Slot: slot, From: from, To: (from + 1) % len(cl.Nodes), Batch: 2,
				Order: func(left []string) []string {
					if mig.oneKey && moved == 0 {
						step(0) // the slot migrates, the user's hash is still on the old owner
					}
					rest := slices.DeleteFunc(slices.Clone(left), func(k string) bool { return k == index })
					if len(rest) == len(left) || moved < count/2 && len(rest) > 0 {
						return rest
					}
					return append([]string{index}, rest...)
				},
				After: func(n int) {
					moved = n
					step(n)
					// Per session: index on the old owner, then on the new one; per user: the hash moved.
					if !mig.revokeAt(n, count) {
						return
					}
					_, err := e.r.RevokeAll(ctx, tag, "")
					if err == nil {
						clear(live)
						return
					}
					if !refusable(err) {
						t.Errorf("%d keys moved: revoke-all: %v", n, err)
					}
					refused++
					for ref := range live {
						if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
							t.Errorf("%d keys moved: a refused revoke-all changed session %s: %v", n, ref.ID(), err)
						}
					}
				},
			}
			if _, err := cl.Migrate(ctx, m); err != nil {
				t.Fatalf("migrate slot %d: %v", slot, err)
			}
			t.Logf("revoke-all refused %d times while the slot was split", refused)
			list, err := e.r.List(ctx, tag, "acme")
			if err != nil || len(list) != len(live) {
				t.Fatalf("list after the move: %d sessions, %v; want %d", len(list), err, len(live))
			}
			if _, err := e.r.RevokeAll(ctx, tag, ""); err != nil {
				t.Fatalf("revoke-all after the move: %v", err)
			}
			for ref := range all {
				if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
					t.Errorf("session %s survived revoke-all: %v", ref.ID(), err)
				}
			}
			// (the user's pending events, in the outbox stream or the user's hash: the relay's to empty)
			kept := int64(len(e.keys()) - len(e.sessionKeys()))
			if n, err := cl.CountKeysInSlot(ctx, m.To, slot); err != nil || int64(n) != kept {
				t.Errorf("after revoke-all the slot still holds %d keys (%v)", n, err)
			}
		})
	}
}
