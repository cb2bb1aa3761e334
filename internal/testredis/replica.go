package testredis

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// StartPrimaryWithReplica starts a private Redis 8 primary (extra: more of its arguments) and
// one replica of it, and returns once the replica's link is up. The primary syncs at once
// (repl-diskless-sync-delay 0: the default would hold the first sync 5 s).
func StartPrimaryWithReplica(t testing.TB, extra ...string) (primary, replica *Server) {
	t.Helper()
	primary = StartServer(t, append([]string{"--repl-diskless-sync-delay", "0"}, extra...)...)
	replica = StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := WaitLinkUp(ctx, replica.Port); err != nil {
		t.Fatal(err)
	}
	return primary, replica
}
