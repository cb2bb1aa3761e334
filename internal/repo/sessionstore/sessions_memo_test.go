package sessionstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A session revoked through another gateway stops authorizing here by Redis's invalidation
// push alone: the cache TTL is far longer than the test waits, and this gateway made no write
// (so no read-your-writes mark is involved). The memo must drop its decoded copy with the push.
func TestSessionRevokedElsewhereSeenThroughPush(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		if !b.Real() {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testredis.Prefix(t)
			s := testredis.Open(t, b, b.Tracking(prefix))
			if !s.Caps.ClientCache {
				t.Skip("no client-side cache")
			}
			here := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = time.Minute })
			there := newSessEnv(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, nil)
			ctx := context.Background()
			for range 5 {
				ref := here.create("", "acme", "alice", time.Hour, 2*time.Hour)
				for range 3 {
					if _, err := here.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
						t.Fatal(err)
					}
				}
				if ac, err := here.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || !ac.CacheHit {
					t.Fatalf("not cached: %+v %v", ac, err)
				}
				if ok, err := there.r.Revoke(ctx, ref, "acme"); err != nil || !ok {
					t.Fatalf("revoke elsewhere: %v %v", ok, err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					_, err := here.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
					if errors.Is(err, apperr.NotFound) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if time.Now().After(deadline) {
						t.Fatal("the revocation's push never reached this gateway's decoded copy")
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
		})
	}
}

func TestAuthMemo(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	entry := func() *memoEntry { return &memoEntry{hot: hotSession{idle: 1}, until: now.Add(time.Second)} }
	const prefix = "hg:v1:sess:{"
	ref := func(s string) session.Ref { return session.Ref{Tag: "TAGTAGTAGTAG", Part: s} }
	key := func(s string) string { return prefix + "TAGTAGTAGTAG}:" + s }
	newMemo := func() *authMemo { return newAuthMemo(prefix, DefaultSessionCacheEntries) }

	t.Run("expiry", func(t *testing.T) {
		m := newMemo()
		m.put(ref("k"), entry(), m.version(ref("k")), now)
		if _, ok := m.get(ref("k"), now.Add(999*time.Millisecond)); !ok {
			t.Fatal("entry gone before its TTL")
		}
		if _, ok := m.get(ref("k"), now.Add(time.Second)); ok {
			t.Fatal("entry outlived its TTL")
		}
		if m.n.Load() != 0 {
			t.Fatalf("%d entries counted after expiry", m.n.Load())
		}
	})
	t.Run("push drops the key only", func(t *testing.T) {
		m := newMemo()
		m.put(ref("a"), entry(), m.version(ref("a")), now)
		m.put(ref("b"), entry(), m.version(ref("b")), now)
		m.invalidate([]string{key("a"), "hg:v1:token:{x}", "hg:v1:sess:{broken"}, false)
		if _, ok := m.get(ref("a"), now); ok {
			t.Fatal("invalidated entry still served")
		}
		if _, ok := m.get(ref("b"), now); !ok {
			t.Fatal("another key's entry dropped")
		}
		m.invalidate(nil, true)
		if _, ok := m.get(ref("b"), now); ok || m.n.Load() != 0 {
			t.Fatal("flush-all left an entry")
		}
	})
	// The per-user layout keeps all of a user's sessions in one key, <prefix>:v1:sess:{<tag>}:
	// its push drops every session of the tag kept, and only those.
	t.Run("a push for the user's hash drops the user's sessions", func(t *testing.T) {
		m := newMemo()
		other := session.Ref{Tag: "OTHEROTHER", Part: "a"}
		for _, r := range []session.Ref{ref("a"), ref("b"), other} {
			m.put(r, entry(), m.version(r), now)
		}
		m.invalidate([]string{prefix + "TAGTAGTAGTAG}"}, false)
		for _, r := range []session.Ref{ref("a"), ref("b")} {
			if _, ok := m.get(r, now); ok {
				t.Fatalf("%+v still served after its user's hash was invalidated", r)
			}
		}
		if _, ok := m.get(other, now); !ok {
			t.Fatal("another user's entry dropped")
		}
		if n := m.n.Load(); n != 1 {
			t.Fatalf("%d entries counted, want 1", n)
		}
		// Kept again afterwards, and a per-session key's push still drops its session alone.
		m.put(ref("a"), entry(), m.version(ref("a")), now)
		m.put(ref("b"), entry(), m.version(ref("b")), now)
		m.invalidate([]string{key("a")}, false)
		if _, ok := m.get(ref("a"), now); ok {
			t.Fatal("the per-session key's push did not drop its session")
		}
		if _, ok := m.get(ref("b"), now); !ok {
			t.Fatal("the per-session key's push dropped another session of the user")
		}
	})
	t.Run("a push for the user's hash during the read blocks the store", func(t *testing.T) {
		m := newMemo()
		v := m.version(ref("k"))
		m.invalidate([]string{prefix + "TAGTAGTAGTAG}"}, false)
		m.put(ref("k"), entry(), v, now)
		if _, ok := m.get(ref("k"), now); ok || m.n.Load() != 0 {
			t.Fatal("a read that the user's push overtook was stored")
		}
	})
	// Puts, expiries and pushes for both key shapes racing on a few users keep the count equal
	// to what is kept (the bound relies on it), and a flush leaves nothing.
	t.Run("racing puts and pushes keep the count", func(t *testing.T) {
		m := newMemo()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 2000 {
					r := session.Ref{Tag: "T" + strconv.Itoa(i%3), Part: strconv.Itoa((i + g) % 4)}
					switch i % 5 {
					case 0:
						m.invalidate([]string{prefix + r.Tag + "}"}, false)
					case 1:
						m.invalidate([]string{prefix + r.Tag + "}:" + r.Part}, false)
					case 2:
						m.get(r, now.Add(2*time.Second)) // expired: removed
					default:
						m.put(r, entry(), m.version(r), now)
					}
				}
			}()
		}
		wg.Wait()
		kept := 0
		m.eachUser(func(_ string, u *memoUser) {
			if ps := u.parts.Load(); ps != nil {
				kept += len(*ps)
			}
		})
		if n := m.n.Load(); n != int64(kept) {
			t.Fatalf("counted %d entries, %d kept", n, kept)
		}
		m.invalidate(nil, true)
		if n := m.n.Load(); n != 0 {
			t.Fatalf("%d entries counted after a flush", n)
		}
	})
	// The same across many users (every shard of the map): puts, hits, expiries, both kinds
	// of push, flushes and sweeps from 8 goroutines; then every counted entry is kept and
	// found, and a push still drops what it names.
	t.Run("racing across shards", func(t *testing.T) {
		m := newMemo()
		m.max = 3000 // puts past it sweep
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20000 {
					r := session.Ref{Tag: "U" + strconv.Itoa((i*7+g)%5000), Part: strconv.Itoa(i % 3)}
					switch {
					case i%997 == 0 && g == 0:
						m.invalidate(nil, true)
					case i%11 == 0:
						m.invalidate([]string{prefix + r.Tag + "}"}, false)
					case i%7 == 0:
						m.invalidate([]string{prefix + r.Tag + "}:" + r.Part}, false)
					case i%5 == 0:
						m.get(r, now.Add(time.Duration(i%3)*time.Second)) // some expired: removed
					case i%13 == 0:
						m.sweep(now.Add(time.Duration(i) * time.Millisecond))
					default:
						m.put(r, entry(), m.version(r), now)
					}
				}
			}()
		}
		wg.Wait()
		kept := 0
		m.eachUser(func(tag string, u *memoUser) {
			if ps := u.parts.Load(); ps != nil {
				kept += len(*ps)
				for _, p := range *ps {
					if _, ok := m.get(session.Ref{Tag: tag, Part: p.part}, now); !ok {
						t.Errorf("%s/%s kept but not found", tag, p.part)
					}
				}
			}
		})
		if n := m.n.Load(); n != int64(kept) || n > m.max {
			t.Fatalf("counted %d entries, %d kept, bound %d", n, kept, m.max)
		}
		for i := range 100 {
			r := session.Ref{Tag: "V" + strconv.Itoa(i), Part: "p"}
			m.put(r, entry(), m.version(r), now)
			if _, ok := m.get(r, now); !ok && m.n.Load() < m.max {
				t.Fatalf("%v not stored", r)
			}
			m.invalidate([]string{prefix + r.Tag + "}"}, false)
			if _, ok := m.get(r, now); ok {
				t.Fatalf("%v survived its user's push", r)
			}
		}
	})
	// The memo keeps its own copies of the tag and part: a reference parsed from a request
	// slices the token (60 bytes, a secret) for its tag, which an entry kept for an hour
	// must not hold on to.
	t.Run("keeps no caller's string", func(t *testing.T) {
		m := newMemo()
		token := "hgs_" + "TAGTAGTAGTAG" + "_" + strings.Repeat("r", 43)
		r := session.Ref{Tag: token[4:16], Part: token[17:35]}
		m.put(r, entry(), m.version(r), now)
		m.eachUser(func(tag string, u *memoUser) {
			part := (*u.parts.Load())[0].part
			for _, kept := range []string{tag, part} {
				if p := unsafe.StringData(kept); uintptr(unsafe.Pointer(p)) >= uintptr(unsafe.Pointer(unsafe.StringData(token))) &&
					uintptr(unsafe.Pointer(p)) < uintptr(unsafe.Pointer(unsafe.StringData(token)))+uintptr(len(token)) {
					t.Errorf("kept %q inside the caller's token", kept)
				}
			}
		})
		if _, ok := m.get(r, now); !ok {
			t.Fatal("not found")
		}
	})
	t.Run("a push during the read blocks the store", func(t *testing.T) {
		m := newMemo()
		v := m.version(ref("k"))
		m.invalidate([]string{key("k")}, false) // arrives while the read is being decoded
		m.put(ref("k"), entry(), v, now)
		if _, ok := m.get(ref("k"), now); ok {
			t.Fatal("a read that a push overtook was stored")
		}
		v = m.version(ref("k"))
		m.invalidate(nil, true)
		m.put(ref("k"), entry(), v, now)
		if _, ok := m.get(ref("k"), now); ok {
			t.Fatal("a read that a flush overtook was stored")
		}
		m.put(ref("k"), entry(), m.version(ref("k")), now)
		if _, ok := m.get(ref("k"), now); !ok {
			t.Fatal("a clean read was not stored")
		}
	})
	t.Run("key to reference", func(t *testing.T) {
		m := newMemo()
		for k, want := range map[string]bool{key("abc"): true, prefix + "}:abc": false, prefix + "TAG}:": false,
			"other:v1:sess:{TAG}:abc": false, prefix + "TAG:abc": false, prefix + "TAG}": false} {
			if _, ok := m.refOf(k); ok != want {
				t.Errorf("refOf(%q) ok = %v, want %v", k, ok, want)
			}
		}
		if r, _ := m.refOf(key("abc")); r != ref("abc") {
			t.Errorf("refOf = %+v", r)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		m := newMemo()
		m.max = 10
		for i := range 20 {
			k := ref(string(rune('a' + i)))
			m.put(k, entry(), m.version(k), now)
		}
		if n := m.n.Load(); n != 10 {
			t.Fatalf("%d entries, want the bound 10", n)
		}
		// Once they expire, a put sweeps them and stores again.
		later := now.Add(2 * time.Second)
		m.put(ref("z"), &memoEntry{until: later.Add(time.Second)}, m.version(ref("z")), later)
		if _, ok := m.get(ref("z"), later); !ok || m.n.Load() != 1 {
			t.Fatalf("after expiry: %d entries, z stored %v", m.n.Load(), ok)
		}
	})
}

// refOf is the reference a session's own key names: "<keyPrefix><tag>}:<part>".
func (m *authMemo) refOf(key string) (session.Ref, bool) {
	tag, part, ok := m.keyOf(key)
	if !ok || part == "" {
		return session.Ref{}, false
	}
	return session.Ref{Tag: tag, Part: part}, true
}
