package repo

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A session a per-session gateway wrote (rolling upgrade) is found by every read of a per-user
// gateway: the hot read, the view, with and without the cache, and Get. The reads see the
// legacy device index beside a missing marker, move the user's sessions into the user's hash
// (migrate) and read again; afterwards the legacy keys are gone.
func TestSessionHotReadsMigrateLegacySessions(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.FieldExpiryMs {
			t.Skip("the per-user layout needs hash field expiry")
		}
		ctx := context.Background()
		legacy := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout = LayoutPerSession })
		reads := []struct {
			name  string
			cache time.Duration
			read  func(r *Sessions, ref session.Ref) (string, error)
		}{
			{"hot", time.Minute, func(r *Sessions, ref session.Ref) (string, error) {
				ac, err := r.AuthorizeHot(ctx, ref)
				if err != nil {
					return "", err
				}
				return ac.UserID, nil
			}},
			{"view", time.Minute, func(r *Sessions, ref session.Ref) (string, error) {
				ac, err := r.Authorize(ctx, ref)
				if err != nil {
					return "", err
				}
				return ac.DeviceLabel, nil
			}},
			{"script", 0, func(r *Sessions, ref session.Ref) (string, error) {
				ac, err := r.AuthorizeHot(ctx, ref)
				if err != nil {
					return "", err
				}
				return ac.UserID, nil
			}},
			{"get", 0, func(r *Sessions, ref session.Ref) (string, error) {
				v, err := r.Get(ctx, ref, "acme")
				if err != nil {
					return "", err
				}
				return v.DeviceLabel, nil
			}},
		}
		for _, rd := range reads {
			e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.CacheTTL = rd.cache })
			if !e.r.perUser {
				t.Fatal("a per-user gateway expected on a server with field expiry")
			}
			ref := legacy.create("", "acme", "alice", time.Hour, 2*time.Hour)
			got, err := rd.read(e.r, ref)
			if err != nil || (got != "alice" && got != "laptop") {
				t.Fatalf("%s: a per-session gateway's session read by a per-user one: %q %v", rd.name, got, err)
			}
			if n := e.pttl(e.r.devicesKey(ref.Tag)); n != -2 {
				t.Fatalf("%s: the legacy device index is left (pttl %d)", rd.name, n)
			}
			if e.sessPTTL(ref) <= 0 {
				t.Fatalf("%s: the session is not in the user's hash", rd.name)
			}
		}
	})
}
