package sessions

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Read-your-writes over the client-side cache: once a revoke, revoke-all, rotate, MFA challenge,
// step-up or eviction at the cap by this gateway has returned, its next authentication of the
// old token fails at once (or sees the change). Redis's invalidation push trails the write's
// reply, so without the service's own marks a cached copy answered for a moment after a logout
// (TestEverySessionOperationIsTraced caught it).
func TestSessionWritesSeenAtOnceDespiteCache(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side cache on this backend")
		}
		e := newSvcEnv(t, s, prefix)
		a := replica(t, s, prefix, e.svc.hasher, time.Minute)
		other := replica(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, e.svc.hasher, time.Minute)
		ctx := context.Background()
		// hot authenticates on a until its cache answers; authn reads the hot fields, or the
		// view where the test watches what only the view shows.
		authn := a.Authenticate
		hot := func(token string) *auth.Principal {
			t.Helper()
			for range 4 {
				h0, _ := a.CacheStats()
				p, err := authn(ctx, token)
				if err != nil {
					t.Fatal(err)
				}
				if h1, _ := a.CacheStats(); h1 == h0+1 {
					return p
				}
			}
			t.Fatal("never served from the cache")
			return nil
		}
		gone := func(what, token string) {
			t.Helper()
			if p, err := a.Authenticate(ctx, token); !isKind(err, apperr.InvalidCredentials) {
				t.Fatalf("%s: the old session still authenticates (%+v, %v)", what, p, err)
			}
		}
		create := func(user string) *Issued {
			t.Helper()
			is, err := a.Create(ctx, "acme", CreateInput{UserID: user, AuthLevel: session.LevelBasic})
			if err != nil {
				t.Fatal(err)
			}
			return is
		}
		// A user per round: revoke-all marks every session of its user for a cache TTL.
		for i := range 30 {
			user := "alice-" + strconv.Itoa(i)
			is := create(user)
			hot(is.Token)
			switch i % 5 {
			case 0:
				if err := a.Revoke(ctx, "acme", is.Ref.ID()); err != nil {
					t.Fatal(err)
				}
				gone("revoke", is.Token)
			case 1:
				if n, err := a.RevokeUser(ctx, "acme", user, ""); err != nil || n < 1 {
					t.Fatalf("revoke-all: %d %v", n, err)
				}
				gone("revoke-all", is.Token)
			case 2:
				next, err := a.Rotate(ctx, "acme", is.Ref.ID())
				if err != nil {
					t.Fatal(err)
				}
				gone("rotate", is.Token)
				if _, err := a.Authenticate(ctx, next.Token); err != nil {
					t.Fatalf("rotated session: %v", err)
				}
			case 3:
				if _, err := a.StartChallenge(ctx, "acme", is.Ref.ID()); err != nil {
					t.Fatal(err)
				}
				if p, err := a.AuthenticateView(ctx, is.Token); err != nil || p.Session.Status != session.MFARequired {
					t.Fatalf("challenge: the next read still shows the copy from before it (%+v, %v)", p, err)
				}
			case 4:
				// The challenge comes from another gateway (so this one holds no mark), and this
				// one caches the challenged session again before stepping it up.
				c, err := other.StartChallenge(ctx, "acme", is.Ref.ID())
				if err != nil {
					t.Fatal(err)
				}
				authn = a.AuthenticateView // the status is the view's
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
					if p := hot(is.Token); p.Session.Status == session.MFARequired {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the challenged session was never cached")
					}
				}
				authn = a.Authenticate
				next, err := a.Verify(ctx, "acme", is.Ref.ID(), c.ID, c.Code)
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				gone("step-up", is.Token)
				if p, err := a.Authenticate(ctx, next.Token); err != nil || p.AuthLevel != session.LevelMFA {
					t.Fatalf("stepped-up session: %+v %v", p, err)
				}
			}
		}
		// Eviction at the cap (50 per user here): every session cached, one more create evicts
		// the least recently used, and that one's token fails at once.
		var full []*Issued
		for range 50 {
			full = append(full, create("crowded"))
		}
		for _, is := range full {
			hot(is.Token)
		}
		create("crowded")
		listed, err := a.ListUser(ctx, "acme", "crowded", "", 100)
		live := listed.Items
		if err != nil {
			t.Fatal(err)
		}
		evicted := slices.IndexFunc(full, func(is *Issued) bool {
			return !slices.ContainsFunc(live, func(v session.Session) bool { return v.Ref == is.Ref })
		})
		if evicted < 0 {
			t.Fatalf("nothing evicted: %d live", len(live))
		}
		gone("eviction", full[evicted].Token)
	})
}

func isKind(err error, k *apperr.Kind) bool {
	pe, ok := apperr.As(err)
	return ok && pe.Kind == k
}
