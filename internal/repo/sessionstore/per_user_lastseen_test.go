package sessionstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// In the per-user layout an idle refresh that slides the whole idle window stores no
// lastSeenAtMs: every refresh sets the session's field TTLs to end at min(last use + idle,
// absolute deadline), so while that end is not the deadline the last use is the marker's
// expiry minus the idle timeout. Only a refresh the absolute deadline caps stores it. Every
// reader answers the lastSeenAt it answered when the field was always written: the script's
// view, Get, List, and the cached hot path (memo and rueidis' cache, which also takes its idle
// end from it), for a session never refreshed (its createdAt), refreshed, and refreshed
// against its deadline.
func TestSessionRefreshDerivesLastSeen(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, b testredis.Backend, s *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		ref := e.create(tag, "acme", "alice", 10*time.Second, time.Hour)
		other := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour) // a neighbour, never refreshed
		key := e.r.userKey(tag)
		expireTime := func() int64 {
			t.Helper()
			v, err := e.do(s.Client.B().Hpexpiretime().Key(key).Fields().Numfields(1).
				Field(partField(ref.Part, fieldLive)).Build()).AsIntSlice()
			if err != nil || len(v) != 1 {
				t.Fatalf("HPEXPIRETIME: %v %v", v, err)
			}
			return v[0]
		}
		// check asks every reader for ref's lastSeenAt (and other's, which must stay its
		// createdAt); the cached readers run on their own connection (a copy of their own) and
		// also answer the idle end, which under default tracking derives from it.
		check := func(name string, want time.Time) {
			t.Helper()
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if err != nil || !ac.LastSeenAt.Equal(want) {
				t.Fatalf("%s: script's view lastSeenAt %v, want %v (%v)", name, ac.LastSeenAt, want, err)
			}
			got, err := e.r.Get(ctx, ref, "acme")
			if err != nil || !got.LastSeenAt.Equal(want) {
				t.Fatalf("%s: Get lastSeenAt %v, want %v (%v)", name, got, want, err)
			}
			list, err := e.r.List(ctx, tag, "acme")
			if err != nil || len(list) != 2 {
				t.Fatalf("%s: List %+v %v", name, list, err)
			}
			for _, x := range list {
				w := want
				if x.Ref == other {
					w = x.CreatedAt
				}
				if !x.LastSeenAt.Equal(w) {
					t.Fatalf("%s: List lastSeenAt of %s %v, want %v", name, x.Ref.ID(), x.LastSeenAt, w)
				}
			}
			end := time.UnixMilli(expireTime())
			for _, entries := range []int{0, -1} { // the memo, or rueidis' cache alone
				c := newSessEnv(t, testredis.Open(t, b, b.Tracking(e.prefix)), e.prefix, func(o *SessionOptions) {
					o.Layout, o.CacheTTL = LayoutPerUser, time.Minute
					o.CacheEntries = entries
				})
				for _, read := range []string{"miss", "hit"} {
					ac, err := c.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
					if err != nil || !ac.LastSeenAt.Equal(want) {
						t.Fatalf("%s: cached (%d entries, %s) lastSeenAt %+v, want %v (%v)", name, entries, read, ac, want, err)
					}
					if ac.IdleExpiresAt.After(end) || ac.IdleExpiresAt.Before(end.Add(-2*time.Second)) {
						t.Fatalf("%s: cached (%d entries, %s) idle end %v, the marker's %v", name, entries, read, ac.IdleExpiresAt, end)
					}
				}
			}
		}
		created, err := e.r.Get(ctx, ref, "acme")
		if err != nil {
			t.Fatal(err)
		}
		check("never refreshed", created.CreatedAt)

		// As a session created 5 minutes ago and kept in use: a read that took its idle end from
		// its createdAt would find it long expired.
		e.sessSetKeep(ref, fieldCreatedAt, strconv.FormatInt(e.serverMs()-5*60_000, 10))
		e.sessExpire(ref, 2000)
		from := e.serverMs()
		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		if err != nil || !ac.Refreshed {
			t.Fatalf("refresh: %+v %v", ac, err)
		}
		to := e.serverMs() // the refresh's instant (Redis TIME) is within [from, to]
		if st := e.sessStored(ref); st[fieldLastSeenAt] != "" {
			t.Fatalf("an uncapped refresh stored lastSeenAtMs %s: %v", st[fieldLastSeenAt], st)
		}
		ms := ac.LastSeenAt.UnixMilli()
		if ms < from || ms > to || expireTime() != ms+10_000 {
			t.Fatalf("refresh within [%d, %d]: lastSeenAt %v, marker expires at %d", from, to, ac.LastSeenAt, expireTime())
		}
		check("refreshed", time.UnixMilli(ms).UTC())

		// 8 s left before the absolute deadline, under the 10 s idle timeout: the refresh slides
		// the window to the deadline only, and the last use can no longer be told from the
		// marker's expiry: it is stored.
		abs := e.serverMs() + 8000
		e.sessSetKeep(ref, fieldAbsoluteExpires, strconv.FormatInt(abs, 10))
		e.sessExpire(ref, 1000)
		from = e.serverMs()
		if ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil || !ac.Refreshed {
			t.Fatalf("capped refresh: %+v %v", ac, err)
		}
		to = e.serverMs()
		seen := e.sessStored(ref)[fieldLastSeenAt]
		if ms = sessAtoi(seen); ms < from || ms > to {
			t.Fatalf("a capped refresh within [%d, %d] stored lastSeenAtMs %q", from, to, seen)
		}
		if got := expireTime(); got != abs {
			t.Fatalf("capped refresh: marker expires at %d, the deadline is %d", got, abs)
		}
		check("capped", time.UnixMilli(ms).UTC())
	})
}

// perUserLastSeen answers the newest of the stored lastSeenAtMs, the marker's expiry minus the idle
// timeout and createdAtMs, and leaves malformed values for decodeView to refuse.
func TestSessionLastSeenFromExpiry(t *testing.T) {
	t.Parallel()
	const idle = "60000"
	for _, c := range []struct {
		name string
		m    map[string]string
		exp  int64
		want string // lastSeenAtMs after; "" absent
	}{
		{"refreshed", map[string]string{fieldCreatedAt: "1000", fieldIdleTimeout: idle}, 100_000, "40000"},
		{"implicit idle", map[string]string{fieldCreatedAt: "1000"}, 1000 + ImplicitIdle.Milliseconds() + 5, "1005"},
		{"never refreshed", map[string]string{fieldCreatedAt: "40000", fieldIdleTimeout: idle}, 100_000, ""},
		{"capped at create", map[string]string{fieldCreatedAt: "50000", fieldIdleTimeout: idle}, 100_000, ""},
		{"stored by a capped refresh", map[string]string{fieldCreatedAt: "1000", fieldLastSeenAt: "45000", fieldIdleTimeout: idle}, 100_000, "45000"},
		{"stored before a later refresh", map[string]string{fieldCreatedAt: "1000", fieldLastSeenAt: "30000", fieldIdleTimeout: idle}, 100_000, "40000"},
		{"no field TTL", map[string]string{fieldCreatedAt: "1000", fieldIdleTimeout: idle}, -1, ""},
		{"gone", map[string]string{fieldCreatedAt: "1000", fieldIdleTimeout: idle}, -2, ""},
		{"bad idle", map[string]string{fieldCreatedAt: "1000", fieldIdleTimeout: "x"}, 100_000, ""},
		{"bad created", map[string]string{fieldCreatedAt: "x", fieldIdleTimeout: idle}, 100_000, ""},
		{"bad stored", map[string]string{fieldCreatedAt: "1000", fieldLastSeenAt: "y", fieldIdleTimeout: idle}, 100_000, "y"},
	} {
		perUserLastSeen(c.m, c.exp)
		if got := c.m[fieldLastSeenAt]; got != c.want {
			t.Errorf("%s: lastSeenAtMs %q, want %q", c.name, got, c.want)
		}
	}
}
