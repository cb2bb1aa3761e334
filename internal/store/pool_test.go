package store_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/hashgate/hashgate/internal/testredis"
)

// TestDedicatedConnectionsAreSmall: every durable write and confirmed read takes a connection
// of its own from the client's pool (Durable.run), and a burst of them leaves that many pooled.
// Each must cost the heap little: with rueidis' default 0.5 MiB read and write buffers, a burst
// of MFA verifications left 239 MB of pooled buffers in a gateway, its heap at GOMEMLIMIT and
// the collector taking half its CPU for every request after.
func TestDedicatedConnectionsAreSmall(t *testing.T) {
	b := testredis.Backends()[1] // a real Redis 8
	s := testredis.Open(t, b)
	const conns = 64
	ctx := context.Background()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	held := make([]func(), 0, conns)
	for range conns {
		dc, release := s.Client.Dedicate()
		if err := dc.Do(ctx, dc.B().Ping().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	perConn := float64(heap()-before) / conns
	for _, release := range held {
		release()
	}
	if perConn > 600<<10 {
		t.Fatalf("a dedicated connection costs %.0f KiB of heap, want at most 600 KiB (1,372 KiB with rueidis' default buffers)", perConn/1024)
	}
	t.Logf("a dedicated connection costs %.0f KiB of heap", perConn/1024)
}
