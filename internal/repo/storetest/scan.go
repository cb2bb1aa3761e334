package storetest

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
)

// scan calls each for every key matching pattern on every node of s (a cluster's masters all
// included).
func scan(t *testing.T, s *store.Store, pattern string, each func(node rueidis.Client, key string)) {
	t.Helper()
	for addr, node := range s.Client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(context.Background(), node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan %s: %v", addr, err)
			}
			for _, k := range e.Elements {
				each(node, k)
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
}
