package sessionstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func TestNewSessionsRefusesBadOptions(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	tests := []struct {
		name  string
		tweak func(*SessionOptions)
	}{
		{"fraction 0", func(o *SessionOptions) { o.RefreshFraction = 0 }},
		{"fraction 1", func(o *SessionOptions) { o.RefreshFraction = 1 }},
		{"max", func(o *SessionOptions) { o.MaxPerUser = 0 }},
		{"max over the index bound", func(o *SessionOptions) { o.MaxPerUser = MaxSessionsPerUser + 1 }},
		{"limit", func(o *SessionOptions) { o.MFA.Limit = 0 }},
		{"negative cache TTL", func(o *SessionOptions) { o.CacheTTL = -time.Second }},
		{"long cache TTL", func(o *SessionOptions) { o.CacheTTL = MaxSessionCacheTTL + time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := sessDefaultOptions()
			tt.tweak(&o)
			if _, err := NewSessions(s, repo.Keys{Prefix: "hg"}, o); !errors.Is(err, repo.ErrBadOptions) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// The layout is configuration, never picked from the server: a server without hash field
// expiry refuses the per-user layout (the default) with ErrLayoutUnsupported, where it used to
// be given the per-session layout silently; a server with it keeps the per-session layout when
// that is configured.
func TestSessionLayoutNeverPickedFromTheServer(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, b)
			for _, l := range []SessionLayout{"", LayoutPerUser, LayoutPerSession} {
				o := sessDefaultOptions()
				o.Layout = l
				r, err := NewSessions(s, repo.Keys{Prefix: "hg"}, o)
				hosts := s.Caps.FieldExpiryMs && s.Caps.FieldExpiry != store.FieldExpiryFallback
				switch {
				case l == LayoutPerSession && (err != nil || r.layoutIn() != LayoutPerSession):
					t.Errorf("per-session: err %v, %+v", err, r)
				case l != LayoutPerSession && hosts && (err != nil || r.layoutIn() != LayoutPerUser):
					t.Errorf("%q on a server with field expiry: err %v", l, err)
				case l != LayoutPerSession && !hosts && !errors.Is(err, ErrLayoutUnsupported):
					t.Errorf("%q without field expiry: err %v, want ErrLayoutUnsupported", l, err)
				}
			}
		})
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		ref := e.create(tag, "acme", "alice", 30*time.Minute, 24*time.Hour)
		if p := e.sessPTTL(ref); p <= 29*60*1000 || p > 30*60*1000 {
			t.Fatalf("pttl = %d, want the idle timeout", p)
		}
		// No hash of the token is stored (the key derives from it), and defaults are not written.
		for _, f := range []string{"tokenHash", fieldStatus, fieldAuthLevel, fieldFailedMFA, fieldLastSeenAt, fieldLastRotatedAt, fieldIdleTimeout} {
			if v := e.sessGet(ref, f); v != "" {
				t.Fatalf("%s stored at create", f)
			}
		}

		ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		if err != nil || ac.UserID != "alice" || ac.TenantID != "acme" || ac.Status != session.Active ||
			ac.AuthLevel != session.LevelBasic || ac.Refreshed || ac.Outcome != string(repo.Found) {
			t.Fatalf("authorize: %+v %v", ac, err)
		}
		if d := time.Until(ac.AbsoluteExpiresAt); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
			t.Fatalf("absolute deadline in %v", d)
		}
		if _, err := e.r.Authorize(ctx, session.Ref{Tag: tag, Part: sessPart(t)}, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another token of the same user: %v", err)
		}

		got, err := e.r.Get(ctx, ref, "acme")
		if err != nil || got.UserID != "alice" || got.DeviceLabel != "laptop" || got.CreatedAt.IsZero() ||
			got.LastSeenAt.IsZero() || got.SchemaVersion != repo.SchemaVersion || got.FailedMFAAttempts != 0 {
			t.Fatalf("get: %+v %v", got, err)
		}
		if _, err := e.r.Get(ctx, ref, "globex"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get by another tenant: %v", err)
		}

		ref2 := e.create(tag, "acme", "alice", 30*time.Minute, 24*time.Hour)
		list, err := e.r.List(ctx, tag, "acme")
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if other, err := e.r.List(ctx, tag, "globex"); err != nil || len(other) != 0 {
			t.Fatalf("list by another tenant: %+v %v", other, err)
		}

		if ok, err := e.r.Revoke(ctx, ref2, "globex"); ok || err != nil {
			t.Fatalf("revoke by another tenant: %v %v", ok, err)
		}
		if _, err := e.r.Get(ctx, ref2, "acme"); err != nil {
			t.Fatalf("another tenant's revoke touched the session: %v", err)
		}
		if ok, err := e.r.Revoke(ctx, ref2, "acme"); !ok || err != nil {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if ok, err := e.r.Revoke(ctx, ref2, "acme"); ok || err != nil {
			t.Fatalf("revoke again: %v %v", ok, err)
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 1 || list[0].Ref != ref {
			t.Fatalf("list after revoke: %+v", list)
		}
		e.everyKeyHasTTL()
		if n := e.metric("hashgate_repo_reads", sessAttr("object", "session"), sessAttr("outcome", "found")); n < 3 {
			t.Fatalf("found reads counted = %d", n)
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("object", "session"), sessAttr("outcome", "missing")); n < 1 {
			t.Fatalf("missing reads counted = %d", n)
		}
		// Every read records the payload it carried: at least the eight fields of a plain session.
		if count, sum := e.histogram("hashgate_repo_payload_bytes"); count < 3 || sum < int64(count)*40 {
			t.Fatalf("payload bytes: %d observations summing to %d", count, sum)
		}
	})
}

func TestSessionCreateBound(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = 2; o.LimitPolicy = LimitRefuse })
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "bob", time.Minute, time.Hour)
		e.create(tag, "acme", "bob", time.Minute, time.Hour)
		_, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: sessRef(t, tag), UserID: "bob", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Minute, Absolute: time.Hour})
		if !errors.Is(err, apperr.SessionLimit) {
			t.Fatalf("third session: %v", err)
		}
		// An expired (here: deleted) session no longer counts: it is pruned on the next create
		// (per user: its live marker is gone).
		e.sessDrop(a)
		e.create(tag, "acme", "bob", time.Minute, time.Hour)

		tests := []struct {
			name string
			n    session.Record
			kind *apperr.Kind
		}{
			{"long label", session.Record{DeviceLabel: strings.Repeat("x", session.MaxDeviceLabelBytes+1)}, apperr.BoundExceeded},
			{"long user", session.Record{UserID: strings.Repeat("u", session.MaxUserIDBytes+1)}, apperr.BoundExceeded},
			{"idle over absolute", session.Record{Idle: 2 * time.Hour}, apperr.Validation},
			{"no reference", session.Record{VerifierMAC: testMAC, Ref: session.Ref{Tag: "-"}}, apperr.Validation},
		}
		for _, tt := range tests {
			n := session.Record{VerifierMAC: testMAC, Ref: sessRef(t, ""), UserID: "carol", TenantID: "acme",
				Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Minute, Absolute: time.Hour}
			if tt.n.DeviceLabel != "" {
				n.DeviceLabel = tt.n.DeviceLabel
			}
			if tt.n.UserID != "" {
				n.UserID = tt.n.UserID
			}
			if tt.n.Idle != 0 {
				n.Idle = tt.n.Idle
			}
			if tt.n.Ref.Tag == "-" {
				n.Ref = session.Ref{}
			}
			if _, err := e.r.Create(ctx, n); !errors.Is(err, tt.kind) {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
		for _, k := range e.keys() {
			if strings.Contains(k, "carol") {
				t.Fatalf("a refused create wrote %s", k)
			}
		}
		e.everyKeyHasTTL()
	})
}

func TestSessionRotate(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		before, _ := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.Rotate(ctx, ref, "globex", macOf("next")); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("rotate by another tenant: %v", err)
		}
		got, err := e.r.Rotate(ctx, ref, "acme", macOf("next"))
		if err != nil || got.Ref != ref || got.Status != session.MFARequired || got.AuthLevel != session.LevelBasic {
			t.Fatalf("rotate: %+v %v", got, err)
		}
		if !got.AbsoluteExpiresAt.Equal(before.AbsoluteExpiresAt) || got.IdleExpiresAt.After(before.IdleExpiresAt.Add(time.Second)) {
			t.Fatalf("deadlines changed: %+v vs %+v", got, before)
		}
		if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, session.ErrWrongVerifier) {
			t.Fatalf("old token still works: %v", err)
		}
		next := ref
		if ac, err := e.r.Authorize(ctx, next, session.AuthorizeOptions{VerifierMAC: macOf("next"), View: true}); err != nil || ac.UserID != "alice" ||
			!ac.LastRotatedAt.Equal(got.LastRotatedAt) || !ac.LastRotatedAt.After(ac.CreatedAt.Add(-time.Millisecond)) {
			t.Fatalf("new token: %+v %v", ac, err)
		}
		if !before.LastRotatedAt.Equal(before.CreatedAt) {
			t.Fatalf("a session never rotated reports lastRotatedAt %v, want createdAt %v", before.LastRotatedAt, before.CreatedAt)
		}
		view, err := e.r.Get(ctx, next, "acme")
		if err != nil || !view.ChallengeLive {
			t.Fatalf("the pending challenge did not survive the rotation: %+v %v", view, err)
		}
		list, _ := e.r.List(ctx, ref.Tag, "acme")
		if len(list) != 1 || list[0].Ref != ref {
			t.Fatalf("the device list after rotation: %+v", list)
		}
		if _, err := e.r.Revoke(ctx, ref, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.Rotate(ctx, ref, "acme", macOf("again")); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("rotating a revoked session: %v", err)
		}
		e.everyKeyHasTTL()
	})
}

func TestSessionRevokeAll(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		type sess struct {
			ref session.Ref
		}
		var all []sess
		for range 4 {
			r := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			all = append(all, sess{r})
		}
		for _, x := range all[:2] {
			if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: x.ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
		other := e.create("", "acme", "bob", time.Hour, 2*time.Hour)
		// A crashed non-atomic attempt would leave an index member without its hash (per user:
		// a session's fields without its live marker): the script must cope and count only
		// live sessions.
		e.sessDrop(all[3].ref)

		n, err := e.r.RevokeAll(ctx, tag, all[0].ref.Part)
		if err != nil || n != 2 {
			t.Fatalf("revoke all except one: %d %v", n, err)
		}
		if _, err := e.r.Authorize(ctx, all[0].ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
			t.Fatalf("the kept session: %v", err)
		}
		for _, x := range all[1:] {
			if _, err := e.r.Authorize(ctx, x.ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
				t.Fatalf("revoked session still works: %v", err)
			}
		}
		if _, err := e.r.Authorize(ctx, other, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
			t.Fatalf("another user's session was touched: %v", err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 1 {
			t.Fatalf("revoke all: %d %v", n, err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 0 {
			t.Fatalf("revoke all again: %d %v", n, err)
		}
		// Nothing usable is left under the user's tag: no session, no index, no challenge.
		for _, k := range e.sessionKeys() {
			if strings.Contains(k, "{"+tag+"}") {
				t.Fatalf("left behind: %s", k)
			}
		}
		e.everyKeyHasTTL()
	})
}
