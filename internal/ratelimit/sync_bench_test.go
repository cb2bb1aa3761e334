package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkSyncTake is the request path of a bearer request: its token's and its tenant's
// counters, decided from memory (no Redis call), with the headers' values formatted.
func BenchmarkSyncTake(b *testing.B) {
	s := testredis.Open(b, testredis.Backends()[0])
	h, _, _ := keyhash.Generate()
	l, err := NewSync(s, testredis.Prefix(b), h, SyncOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tok := &Policy{Name: "token", Limit: 1 << 30, Window: time.Minute}
	ten := &Policy{Name: "tenant", Limit: 1 << 30, Window: time.Minute}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ds, ok := l.Take(ctx, Request{tok, "tok-1"}, Request{ten, "acme"})
			if !ok {
				b.Fatal("refused")
			}
			_, _ = HeaderValues(ds)
		}
	})
}
