package testredis

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/store"
)

// KeyCount counts the keys under prefix (prefix+":*") on every node of s, so a cluster's
// keys on all masters are included. Tests use it to prove a refused request wrote nothing.
// SCAN may return a key twice (the keyspace resized meanwhile): each is counted once.
func KeyCount(t testing.TB, s *store.Store, prefix string) int {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	for _, node := range s.Client.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			for _, k := range e.Elements {
				seen[k] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return len(seen)
}
