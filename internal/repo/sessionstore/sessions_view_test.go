package sessionstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The full view and the device list classify idleTimeoutMs as the hot path does: a value that
// is not a positive integer makes the session corrupt — refused, counted, logged by field name —
// never served with the default timeout.
func TestSessionViewClassifiesIdleTimeout(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		bad := []string{"soon", "", "0", "-5", "1.5"}
		for i, v := range bad {
			tag := sessRand(t, 9)
			ref := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			e.sessSetKeep(ref, fieldIdleTimeout, v)
			if got, err := e.r.Get(ctx, ref, "acme"); !errors.Is(err, repo.ErrCorrupt) {
				t.Fatalf("get with idleTimeoutMs %q: %+v %v, want corrupt", v, got, err)
			}
			if n := e.metric("hashgate_repo_reads", sessAttr("outcome", "corrupt")); n != int64(2*i+1) {
				t.Fatalf("%q: corrupt reads counted = %d after get", v, n)
			}
			list, err := e.r.List(ctx, tag, "acme")
			if err != nil || slices.ContainsFunc(list, func(x session.Session) bool { return x.Ref == ref }) {
				t.Fatalf("%q: list = %+v %v, want the corrupt session left out", v, list, err)
			}
			if n := e.metric("hashgate_repo_reads", sessAttr("outcome", "corrupt")); n != int64(2*i+2) {
				t.Fatalf("%q: corrupt reads counted = %d after list", v, n)
			}
		}
	})
}
