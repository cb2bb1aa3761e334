package sessionstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// With the client-side cache, a hot session costs no Redis command and a refresh exactly one
// (the script; in the background when the call already spent its round trip on a cache miss);
// the decision is the gateway's, so a cached copy past the session's idle or absolute deadline
// is refused without asking Redis. Without tracking (the embedded store) the
// option falls back to the one-script path.
func TestSessionAuthorizeCached(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
		ctx := context.Background()
		ref := e.create("", "acme", "alice", 20*time.Second, time.Hour)
		if !s.Caps.ClientCache {
			e.count.Reset()
			for range 2 {
				if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || ac.CacheHit {
					t.Fatalf("authorize without tracking: %+v %v", ac, err)
				}
			}
			if cmds := e.count.Reset(); !slices.Equal(cmds, []string{"EVALSHA", "EVALSHA"}) {
				t.Fatalf("commands %v, want one script per call", cmds)
			}
			return
		}
		// A miss is one round trip: under broadcast tracking a plain HMGET with the key's PTTL,
		// under default tracking an HMGET through rueidis' cache (which adds its own PTTL
		// inside a MULTI, not counted here).
		miss := e.sessMissCmds(b.Broadcast)
		var offset time.Duration // the gateway clock's lead over real time
		e.r.now = func() time.Time { return time.Now().Add(offset) }
		auth := func(name string, ref session.Ref, want ...string) (*session.AuthContext, error) {
			t.Helper()
			e.count.Reset()
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if cmds := e.count.Reset(); !slices.Equal(cmds, want) {
				t.Fatalf("%s: commands %v, want %v", name, cmds, want)
			}
			return ac, err
		}
		// reread waits until a write's invalidation push has reached the gateway (it travels on
		// every tracking connection, not the one that wrote) and returns the read that went to
		// Redis (exactly one round trip) once the copy it kept answers: under broadcast
		// tracking each connection delivers the push, and one arriving after the read drops
		// the copy again, so a read is taken only once a hit follows it.
		reread := func(name string) *session.AuthContext {
			t.Helper()
			var read *session.AuthContext
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				e.count.Reset()
				ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				cmds := e.count.Reset()
				switch {
				case slices.Contains(cmds, "HMGET"):
					if err != nil || !slices.Equal(cmds, miss) {
						t.Fatalf("%s: %+v %v, commands %v", name, ac, err, cmds)
					}
					read = ac
				case read != nil && len(cmds) == 0 && err == nil:
					return read
				}
				// Until the push arrives, the old copy answers (and may find a refresh due).
				if time.Now().After(deadline) {
					t.Fatalf("%s: the invalidation never arrived", name)
				}
			}
		}
		set := func(field string, v int64) {
			t.Helper()
			e.sessSetKeep(ref, field, strconv.FormatInt(v, 10))
		}

		ac := reread("miss")
		if ac.CacheHit || repo.Outcome(ac.Outcome) != repo.Found || ac.UserID != "alice" || ac.DeviceLabel != "laptop" ||
			ac.CreatedAt.IsZero() || ac.SchemaVersion != repo.SchemaVersion {
			t.Fatalf("miss: %+v", ac)
		}
		if d := time.Until(ac.IdleExpiresAt); d < 19*time.Second || d > 20*time.Second+50*time.Millisecond {
			t.Fatalf("idle expiry in %v, want about 20s", d)
		}
		ac, err := auth("hit", ref)
		if err != nil || !ac.CacheHit || ac.UserID != "alice" || ac.TenantID != "acme" || ac.Refreshed {
			t.Fatalf("hit: %+v %v", ac, err)
		}
		if _, err := auth("another token of the user", session.Ref{Tag: ref.Tag, Part: sessPart(t)}, e.sessMissCmds(b.Broadcast)...); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another token of the user: %v", err)
		}

		// A copy found due on a hit runs the script and waits for it. Prime a copy that is not
		// due yet, then let it become due.
		if b.Broadcast {
			// The copy's end is the key's PTTL as read, immune to the gateway's clock: prime
			// with 7 of the 20 idle seconds left, then let real time pass the quarter mark
			// (under 5 s left) on both sides.
			set(fieldLastSeenAt, e.serverMs()-13000)
			e.sessExpire(ref, 7000)
			if ac := reread("prime"); ac.Refreshed {
				t.Fatalf("prime: %+v", ac)
			}
			time.Sleep(2100 * time.Millisecond)
		} else {
			// 16 of the 20 idle seconds have passed, on both clocks: under 25% is left, a
			// refresh is due.
			now := e.serverMs()
			set(fieldLastSeenAt, now-16000)
			e.sessExpire(ref, 4000)
			offset = -16 * time.Second // cache the copy while the gateway still thinks it fresh
			if ac := reread("prime"); ac.Refreshed || time.Since(ac.LastSeenAt) < 15*time.Second {
				t.Fatalf("prime: %+v", ac)
			}
			offset = 0
		}
		ac, err = auth("refresh due", ref, "EVALSHA")
		if err != nil || !ac.Refreshed || ac.CacheHit || time.Since(ac.LastSeenAt) > time.Second {
			t.Fatalf("refresh: %+v %v", ac, err)
		}
		if p := e.sessPTTL(ref); p < 15000 { // 20 s idle, less a loaded machine's delay; 4 s before the refresh
			t.Fatalf("pttl %d after the refresh", p)
		}
		// The refresh's write invalidated the copy: one read, then hits again.
		if ac := reread("after refresh"); ac.Refreshed || time.Since(ac.LastSeenAt) > time.Second {
			t.Fatalf("after refresh: %+v", ac)
		}
		if _, err := auth("hit again", ref); err != nil {
			t.Fatal(err)
		}

		// Due, and not cached: the read is the call's one round trip and the call does not wait
		// for the refresh, which follows in the background.
		set(fieldLastSeenAt, e.serverMs()-16000)
		e.sessExpire(ref, 4000)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			e.count.Reset()
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			cmds := e.count.Reset()
			if err != nil {
				t.Fatalf("due after a miss: %v", err)
			}
			if slices.Contains(cmds, "HMGET") {
				if cmds[0] != "HMGET" || ac.CacheHit || ac.Refreshed {
					t.Fatalf("due after a miss: %+v, commands %v", ac, cmds)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("due after a miss: the invalidation never arrived")
			}
		}
		for deadline := time.Now().Add(5 * time.Second); e.sessPTTL(ref) < 19000; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the background refresh never happened")
			}
		}
		if ac := reread("after the background refresh"); time.Since(ac.LastSeenAt) > time.Second {
			t.Fatalf("after the background refresh: %+v", ac)
		}

		// A copy is never served past the idle window, even if Redis were never asked again.
		offset = 21 * time.Second
		if _, err := auth("idle window over", ref); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("idle window over: %v", err)
		}
		// Nor past the absolute deadline, idle window or not.
		offset = 0
		abs := e.serverMs() + 3000
		set(fieldAbsoluteExpires, abs)
		if ac := reread("prime near the deadline"); ac.AbsoluteExpiresAt.UnixMilli() != abs {
			t.Fatalf("prime near the deadline: %+v", ac)
		}
		offset = 4 * time.Second
		if _, err := auth("absolute deadline passed", ref); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("absolute deadline passed: %v", err)
		}
		if n := e.metric("hashgate_repo_events", sessAttr("event", "expired_in_cache")); n != 2 {
			t.Fatalf("expired_in_cache events = %d, want 2", n)
		}
		offset = 0

		// Corrupt hashes and keys of the wrong type are refused through the cache too.
		// (No tenantId: per user, the session's marker makes it live, and corrupt.)
		bad := sessRef(t, "")
		badOwn := map[string]string{"tokenHash": sessRand(t, 32), fieldAbsoluteExpires: strconv.FormatInt(e.serverMs()+60_000, 10)}
		e.sessWriteRaw(bad, map[string]string{fieldUserID: "u", fieldSchemaVersion: "2"}, badOwn, 60_000)
		if _, err := auth("corrupt", bad, miss...); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("corrupt: %v", err)
		}
		wrong := sessRef(t, "")
		wrongKey := e.sessWrongType(wrong)
		if _, err := auth("wrong type", wrong, miss...); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("wrong type: %v", err)
		}
		// The deliberately wrong-typed key goes: the keyspace audit after the suite checks
		// every key left against docs/KEYS.md.
		if err := e.do(e.s.Client.B().Del().Key(wrongKey).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if hits, misses := e.r.CacheStats(); hits < 5 || misses < 5 {
			t.Fatalf("cache stats %d hits, %d misses", hits, misses)
		}
		e.everyKeyHasTTL()
	})
}

// The hot path reads at most seven fields (the groups are the access rules' sixth, the verifier
// MAC the seventh), the view read what "who am I" shows: neither ever
// reads the code MAC, the device hashes or an old hash's tokenHash, and the view holds every
// hot field (a view read fills the memo for both).
func TestSessionAuthFields(t *testing.T) {
	t.Parallel()
	if len(sessHotFields) > 7 {
		t.Errorf("the hot path reads %d fields: %v", len(sessHotFields), sessHotFields)
	}
	for _, f := range sessHotFields {
		if !slices.Contains(sessViewFields, f) {
			t.Errorf("sessViewFields lacks hot field %s", f)
		}
	}
	for _, f := range []string{"mfaCodeMac", fieldIPHash, fieldUserAgentHash, "tokenHash"} {
		if slices.Contains(sessHotFields, f) || slices.Contains(sessViewFields, f) {
			t.Errorf("a session read asks for %s", f)
		}
	}
}
