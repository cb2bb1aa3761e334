package sessions

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// replica is another gateway's session service over s: same HMAC key and key prefix, hot path
// read through the client-side cache with cacheTTL.
func replica(t *testing.T, s *store.Store, prefix string, h *keyhash.Hasher, cacheTTL time.Duration) *Service {
	t.Helper()
	r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: prefix}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
		MaxPerUser: 50, CacheTTL: cacheTTL,
		MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(r, h, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour, ChallengeTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// Every write that ends or changes a session reaches a replica that has it cached: Redis pushes
// an invalidation, so replica B refuses the token (or sees the new status and level) as soon
// as the push lands — its cache TTL is a minute, so nothing else could explain it.
func TestCachedSessionInvalidation(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side caching here (the embedded store has no tracking)")
		}
		a := newSvcEnv(t, s, prefix)
		ctx := context.Background()
		// Replica A reads through its cache too: its own writes must not be served stale to it.
		a.svc = replica(t, s, prefix, a.svc.hasher, time.Minute)
		rb := replica(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, a.svc.hasher, time.Minute)

		// authn is how B authenticates: the hot fields, or the view for the subtests that
		// watch what only the view shows.
		authn := rb.Authenticate
		// cached authenticates on B until B's cache answers, and returns that principal. Under
		// broadcast tracking every tracking connection delivers each write's push, so one
		// arriving after B's read may drop B's copy once more: B reads again.
		cached := func(token string) *auth.Principal {
			t.Helper()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				h0, _ := rb.CacheStats()
				p, err := authn(ctx, token)
				if err != nil {
					t.Fatalf("authenticate on B: %v", err)
				}
				if h1, _ := rb.CacheStats(); h1 == h0+1 {
					return p
				}
			}
			t.Fatal("B never answered from its cache")
			return nil
		}
		var slowest time.Duration
		// until polls B until ok accepts its answer.
		until := func(what, token string, ok func(*auth.Principal, error) bool) {
			t.Helper()
			start := time.Now()
			for {
				p, err := authn(ctx, token)
				if ok(p, err) {
					slowest = max(slowest, time.Since(start))
					return
				}
				if time.Since(start) > 5*time.Second {
					t.Fatalf("%s: B still answers %+v, %v after 5s (cache TTL 1m)", what, p, err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		refused := func(_ *auth.Principal, err error) bool {
			pe, ok := apperr.As(err)
			return ok && pe.Kind == apperr.InvalidCredentials
		}
		view := func(p *auth.Principal) *session.Session {
			v := p.Session
			if v == nil {
				t.Fatalf("principal without the session's view: %+v", p)
			}
			return v
		}

		t.Run("revoke", func(t *testing.T) {
			is := a.create("acme", "u-revoke", CreateInput{})
			cached(is.Token)
			if err := a.svc.Revoke(ctx, "acme", is.Ref.ID()); err != nil {
				t.Fatal(err)
			}
			until("revoke", is.Token, refused)
		})
		t.Run("logout", func(t *testing.T) {
			is := a.create("acme", "u-logout", CreateInput{})
			cached(is.Token)
			if err := a.svc.Logout(ctx, mustAuth(t, a.svc, is.Token)); err != nil {
				t.Fatal(err)
			}
			until("logout", is.Token, refused)
			wantKind(t, authErr(a.svc.Authenticate(ctx, is.Token)), apperr.InvalidCredentials)
		})
		t.Run("rotate", func(t *testing.T) {
			is := a.create("acme", "u-rotate", CreateInput{})
			cached(is.Token)
			rot, err := a.svc.Rotate(ctx, "acme", is.Ref.ID())
			if err != nil {
				t.Fatal(err)
			}
			a.remember(rot.Token)
			until("rotate", is.Token, refused)
			if p := cached(rot.Token); p.SessionID != rot.Ref.ID() {
				t.Fatalf("rotated principal %+v", p)
			}
		})
		t.Run("revoke all", func(t *testing.T) {
			var all []*Issued
			for range 3 {
				is := a.create("acme", "u-all", CreateInput{})
				cached(is.Token)
				all = append(all, is)
			}
			if n, err := a.svc.RevokeUser(ctx, "acme", "u-all", ""); err != nil || n != 3 {
				t.Fatalf("revoke all: %d %v", n, err)
			}
			for _, is := range all {
				until("revoke all", is.Token, refused)
			}
		})
		t.Run("mfa step-up", func(t *testing.T) {
			authn = rb.AuthenticateView // the status is the view's
			defer func() { authn = rb.Authenticate }()
			is := a.create("acme", "u-mfa", CreateInput{})
			if v := view(cached(is.Token)); v.Status != session.Active {
				t.Fatalf("status %s", v.Status)
			}
			c := a.challenge("acme", is.Ref.ID())
			until("challenge", is.Token, func(p *auth.Principal, err error) bool {
				return err == nil && view(p).Status == session.MFARequired
			})
			cached(is.Token)
			up, err := a.verify("acme", is.Ref.ID(), c.ID, c.Code)
			if err != nil {
				t.Fatal(err)
			}
			until("step-up", is.Token, refused)
			if p := cached(up.Token); p.AuthLevel != session.LevelMFA || view(p).Status != session.MFAVerified {
				t.Fatalf("stepped-up principal %+v", p)
			}
		})
		t.Run("sign out everywhere else", func(t *testing.T) {
			mine := a.create("acme", "u-others", CreateInput{})
			var others []*Issued
			for range 3 {
				is := a.create("acme", "u-others", CreateInput{})
				cached(is.Token)
				others = append(others, is)
			}
			cached(mine.Token)
			if n, err := a.svc.RevokeOtherDevices(ctx, mustAuth(t, a.svc, mine.Token)); err != nil || n != 3 {
				t.Fatalf("sign out everywhere else: %d %v", n, err)
			}
			for _, is := range others {
				until("sign out everywhere else", is.Token, refused)
				wantKind(t, authErr(a.svc.Authenticate(ctx, is.Token)), apperr.InvalidCredentials)
			}
			if p := cached(mine.Token); p.SessionID != mine.Ref.ID() {
				t.Fatalf("the current session: %+v", p)
			}
		})
		t.Run("login-time mfa", func(t *testing.T) {
			is := a.create("acme", "u-login-mfa", CreateInput{MFARequired: true})
			wantKind(t, LoggedIn(cached(is.Token)), apperr.MFARequired)
			wantKind(t, LoggedIn(cached(is.Token)), apperr.MFARequired)
			c := a.challenge("acme", is.Ref.ID())
			up, err := a.verify("acme", is.Ref.ID(), c.ID, c.Code)
			if err != nil {
				t.Fatal(err)
			}
			until("login verify", is.Token, refused)
			p := cached(up.Token)
			if err := LoggedIn(p); err != nil || p.AuthLevel != session.LevelMFA {
				t.Fatalf("verified login on B: %+v %v", p, err)
			}
		})
		t.Run("evicted at the cap", func(t *testing.T) {
			oldest := a.create("acme", "u-cap", CreateInput{})
			time.Sleep(2 * time.Millisecond) // last use is known to the millisecond
			for range 49 {
				a.create("acme", "u-cap", CreateInput{})
			}
			cached(oldest.Token)
			fresh := a.create("acme", "u-cap", CreateInput{}) // the 51st: evicts the oldest
			until("eviction", oldest.Token, refused)
			wantKind(t, authErr(a.svc.Authenticate(ctx, oldest.Token)), apperr.InvalidCredentials)
			cached(fresh.Token)
		})
		t.Logf("slowest invalidation seen by B: %v", slowest)
	})
}

// AuthenticateView hands "who am I" the session's view, so Current reads nothing more; a
// principal without it (Authenticate's, which reads only the hot fields, or one with another
// session's view) is read from Redis.
func TestCurrentUsesTheAuthenticatedView(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	e := newSvcEnv(t, s, testredis.Prefix(t))
	ctx := context.Background()
	is := e.create("acme", "alice", CreateInput{DeviceLabel: "phone"})
	hot := mustAuth(t, e.svc, is.Token)
	if hot.Session != nil || hot.LoginPending || hot.Subject != "alice" || hot.Tenant != "acme" || hot.ExpiresAt.IsZero() {
		t.Fatalf("hot principal %+v", hot)
	}
	if cur, err := e.svc.Current(ctx, hot); err != nil || cur.DeviceLabel != "phone" || cur.Ref != is.Ref {
		t.Fatalf("current of the hot principal %+v %v", cur, err)
	}
	p, err := e.svc.AuthenticateView(ctx, is.Token)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Session
	if v == nil || v.Ref != is.Ref || v.DeviceLabel != "phone" || v.CreatedAt.IsZero() || !v.IdleExpiresAt.Equal(p.ExpiresAt) {
		t.Fatalf("principal's view %+v", p.Session)
	}
	// Once revoked, only the principal's view still knows the session: Current answers with it.
	if err := e.svc.Revoke(ctx, "acme", is.Ref.ID()); err != nil {
		t.Fatal(err)
	}
	if cur, err := e.svc.Current(ctx, p); err != nil || cur != v {
		t.Fatalf("current %+v %v, want the principal's view", cur, err)
	}
	for name, other := range map[string]*session.Session{"none": nil, "another session": {Ref: session.Ref{Tag: is.Ref.Tag, Part: "x"}}} {
		t.Run(name, func(t *testing.T) {
			q := *p
			q.Session = other
			wantKind(t, second(e.svc.Current(ctx, &q)), apperr.InvalidCredentials)
		})
	}
}

// The cache's hits and misses, and their ratio, are exported as metrics.
func TestCacheMetrics(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side caching here (the embedded store has no tracking)")
		}
		e := newSvcEnv(t, s, prefix)
		reader := sdkmetric.NewManualReader()
		r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: prefix}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
			MaxPerUser: 50, CacheTTL: time.Minute,
			MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		svc, err := New(r, e.svc.hasher, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour,
			ChallengeTTL: 5 * time.Minute, Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")})
		if err != nil {
			t.Fatal(err)
		}
		is := e.create("acme", "alice", CreateInput{})
		for range 4 {
			if _, err := svc.Authenticate(context.Background(), is.Token); err != nil {
				t.Fatal(err)
			}
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					for _, dp := range d.DataPoints {
						res, _ := dp.Attributes.Value("result")
						got[m.Name+"/"+res.AsString()] += float64(dp.Value)
					}
				case metricdata.Gauge[float64]:
					for _, dp := range d.DataPoints {
						got[m.Name] = dp.Value
					}
				}
			}
		}
		// One miss, then hits — or one more miss when a push of the create arrives after the
		// first read on another tracking connection (broadcast tracking) and drops the copy.
		hits, misses := got["hashgate_session_auth_cache_lookups/hit"], got["hashgate_session_auth_cache_lookups/miss"]
		if hits+misses != 4 || misses < 1 || misses > 2 || got["hashgate_session_auth_cache_hit_ratio"] != hits/4 ||
			got["hashgate_session_authentications/ok"] != 4 {
			t.Fatalf("metrics %v", got)
		}
	})
}
