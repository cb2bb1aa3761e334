package ratesync

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestClockOffsetNotSetBackBySlowNode: a flush is one batch over every node holding a counter,
// and it returns when the slowest node answers. A fast node's reply carries the server's time
// from when it ran; taking the offset to the server's clock from it against the batch's return
// set the replica's windows behind by the slow node's delay (a cut-off master: up to the Redis
// timeout), so replicas counted into different windows (ROBUSTNESS.md, "The rate limits in a
// cluster's quiet windows": the `[24 25]` windows). A batch slower than clockSampleMaxRTT does
// not move the offset.
func TestClockOffsetNotSetBackBySlowNode(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	s := testredis.Open(t, testredis.Backend{Name: "cluster", Env: testredis.EnvCluster, URL: cl.URL()})
	ctx := context.Background()
	h, _, _ := keyhash.Generate()
	l := newLimiter(t, s, testredis.Prefix(t), h, Options{FlushInterval: time.Hour})
	p := &ratelimit.Policy{Name: "token", Limit: 1000, Window: time.Hour}
	// Two identifiers whose counters live on different nodes; the slow node's comes first in
	// the batch, so a fast node's reply is the last one read.
	owner := func(id string) int {
		slot, err := cl.KeySlot(ctx, l.counter(ctx, ratelimit.Request{Policy: p, ID: id}).key)
		if err != nil {
			t.Fatal(err)
		}
		i, err := cl.Owner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	slow, fast := ratelimit.Request{Policy: p, ID: "id-0"}, ratelimit.Request{}
	slowNode := owner(slow.ID)
	for i := 1; fast.Policy == nil; i++ {
		if id := fmt.Sprintf("id-%d", i); owner(id) != slowNode {
			fast = ratelimit.Request{Policy: p, ID: id}
		}
	}
	take := func() {
		for _, r := range []ratelimit.Request{slow, fast} {
			if _, ok := l.Take(ctx, r); !ok {
				t.Fatalf("%s refused", r.ID)
			}
		}
	}
	take()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := l.offset.Load() // the same machine's clocks: within a few ms of 0
	take()
	stalled := make(chan error, 1)
	go func() { stalled <- cl.Do(ctx, slowNode, "DEBUG", "SLEEP", "0.8").Error() }()
	time.Sleep(100 * time.Millisecond) // the node is asleep
	start := time.Now()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-stalled; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < 500*time.Millisecond {
		t.Fatalf("the flush took %v: the node was not stalled", took)
	}
	if after := l.offset.Load(); after < before-50 || after > before+50 {
		t.Fatalf("offset %d ms after a flush of %v, %d ms before: a slow node moved the replica's clock", after, took, before)
	}
}
