package sessions

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestSetGroupsSeenByEveryGateway: a session's groups replaced through one gateway are what
// that gateway's next authentication answers at once (its own write is read from Redis, not
// its kept copy), and what another gateway, which kept the session with its old groups,
// answers as soon as Redis's invalidation push lands (within 1 s, far within the cache TTL).
func TestSetGroupsSeenByEveryGateway(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		h, _, err := keyhash.Generate()
		if err != nil {
			t.Fatal(err)
		}
		svc, _, _ := absentEnv(t, s, prefix, h)
		ctx := context.Background()
		is, err := svc.Create(ctx, "acme", CreateInput{UserID: "alice", AuthLevel: "BASIC", Groups: []string{"staff"}})
		if err != nil {
			t.Fatal(err)
		}
		groups := func(svc *Service) []string {
			t.Helper()
			p, err := svc.Authenticate(ctx, is.Token)
			if err != nil {
				t.Fatal(err)
			}
			return p.Groups
		}
		if g := groups(svc); !slices.Equal(g, []string{"staff"}) {
			t.Fatalf("created with staff, authenticated with %v", g)
		}
		var other *Service
		if s.Caps.ClientCache {
			other, _, _ = absentEnv(t, testredis.Open(t, b, b.Tracking(prefix)), prefix, h)
			for range 3 { // kept by the other gateway with the old groups
				if g := groups(other); !slices.Equal(g, []string{"staff"}) {
					t.Fatalf("other gateway: %v", g)
				}
			}
		}

		v, err := svc.SetGroups(ctx, "acme", is.Ref.ID(), []string{"staff", "admins"})
		want := []string{"staff", "admins"}
		if err != nil || !slices.Equal(v.Groups, want) {
			t.Fatalf("set groups: %+v %v", v, err)
		}
		if g := groups(svc); !slices.Equal(g, want) {
			t.Fatalf("this gateway right after its write: %v, want %v", g, want)
		}
		if _, err := svc.SetGroups(ctx, "other-tenant", is.Ref.ID(), nil); !isKind(err, apperr.NotFound) {
			t.Fatalf("another tenant's session: %v, want not found", err)
		}
		if _, err := svc.SetGroups(ctx, "acme", is.Ref.ID(), []string{"a b"}); !isKind(err, apperr.Validation) {
			t.Fatalf("a bad group: %v, want validation", err)
		}
		if other == nil {
			return // no client-side cache: every authentication reads Redis
		}
		start := time.Now()
		for !slices.Equal(groups(other), want) {
			if time.Since(start) > time.Second {
				t.Fatalf("the other gateway still answered the old groups 1s after the change")
			}
			time.Sleep(time.Millisecond)
		}
		t.Logf("%s: the other gateway saw the new groups after %v", b.Name, time.Since(start))
	})
}
