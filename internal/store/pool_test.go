package store_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
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

// TestDurableWritesBoundTheirConnections: the confirmed writes take at most durableConnsMax
// dedicated connections at once (each about 0.5 MiB), and one that finds them all taken waits
// only as long as the store's timeout, then answers unavailable (503), instead of growing the
// pool with a burst's concurrency or waiting in rueidis' pool, which takes no context.
func TestDurableWritesBoundTheirConnections(t *testing.T) {
	s := testredis.Open(t, testredis.Backends()[1]) // a real Redis 8: the embedded store confirms nothing
	d := s.Durable
	if d.ConnsBound() != store.DurableConnsMax {
		t.Fatalf("the confirmed writes may take %d connections, want durableConnsMax (%d)", d.ConnsBound(), store.DurableConnsMax)
	}
	d.BoundConns(2) // two, to fill them here
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{}, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- d.Run(ctx, s.Client, func(c rueidis.Client) (bool, error) {
				held <- struct{}{}
				<-hold
				return false, c.Do(ctx, c.B().Ping().Build()).Error()
			})
		}()
	}
	<-held
	<-held
	start := time.Now()
	err := d.Run(ctx, s.Client, func(c rueidis.Client) (bool, error) {
		return false, c.Do(ctx, c.B().Ping().Build()).Error()
	})
	if waited := time.Since(start); !store.IsUnavailable(err) || waited > d.CallTimeout()+time.Second {
		t.Fatalf("a write with every connection taken: %v after %s, want unavailable within the store's timeout (%s)", err, waited, d.CallTimeout())
	}
	close(hold)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for end := time.Now().Add(5 * time.Second); d.ConnsTaken() > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the connections go back in the background
	}
	if err := d.Run(ctx, s.Client, func(c rueidis.Client) (bool, error) {
		return false, c.Do(ctx, c.B().Ping().Build()).Error()
	}); err != nil {
		t.Fatalf("a write once the connections are back: %v", err)
	}
}
