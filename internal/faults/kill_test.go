package faults

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Redis (append-only, fsync on every write) is killed with SIGKILL while writers create quotes
// and sessions, then restarted on the same port and data. During the outage every answer is a
// 503 problem with Retry-After within the Redis timeout plus a margin (no hang, no 500) and
// /readyz answers 503; the gateway resumes by itself once Redis is back; the goroutine count
// returns to where it was; and every write acknowledged before, during or after the outage is
// there afterwards.
//
// Not parallel: it compares the process's goroutine counts, which other tests would disturb.
func TestRedisKilledMidLoad(t *testing.T) {
	srv := testredis.StartServer(t)
	const timeout = 300 * time.Millisecond
	bound := timeout + 500*time.Millisecond
	g := startGateway(t, srv.URL(), timeout)
	bearer := g.bearer("t-kill", "quotes:read", "quotes:write", "sessions:read", "sessions:write")
	g.waitReady(t, 10*time.Second)
	if _, _, err := g.createQuote(bearer, "warm-up"); err != nil {
		t.Fatal(err)
	}
	base := g.settledGoroutines(t, -1, 10*time.Second)

	l := newLoad(t)
	wl := &writeLog{}
	const writers = 4
	for w := range writers {
		l.spawn(func() { writer(g, l, wl, bearer, w, bound) })
	}
	pollUntil(t, 20*time.Second, "writes acknowledged before the kill", func() bool { return wl.acked.Load() >= 20 })

	srv.Stop()
	ackedAtKill := wl.acked.Load()
	var during atomic.Int64
	sample := func() {
		if n := int64(runtime.NumGoroutine()); n > during.Load() {
			during.Store(n)
		}
	}
	refusedAtKill := wl.refused.Load()
	pollUntil(t, 20*time.Second, "503s while Redis is down", func() bool {
		sample()
		return wl.refused.Load() >= refusedAtKill+40
	})
	for range 3 {
		g.checkReadyz503(t, bound)
		sample()
	}
	// Acknowledged after the kill means acknowledged without Redis: only requests already past
	// their write when it died may still have been answered 2xx, never one that began after.
	acksDuringOutage := wl.acked.Load() - ackedAtKill

	srv.Start()
	g.waitReady(t, 20*time.Second)
	ackedAtRestart := wl.acked.Load()
	pollUntil(t, 20*time.Second, "writes acknowledged after the restart", func() bool { return wl.acked.Load() >= ackedAtRestart+20 })
	l.halt()
	l.check(t)
	if acksDuringOutage > writers {
		t.Errorf("%d writes were acknowledged while Redis was dead (at most the %d in flight at the kill may be)", acksDuringOutage, writers)
	}

	// No goroutine growth: once idle connections are closed, the count is back near the base.
	const slack = 10
	after := g.settledGoroutines(t, base+slack, 15*time.Second)
	t.Logf("Redis killed and restarted: %d requests, %d acknowledged writes, %d answered 503 (slowest %v, bound %v); goroutines before %d, during ≤%d, after %d",
		l.attempts.Load(), wl.acked.Load(), wl.refused.Load(), time.Duration(wl.slowest.Load()).Round(time.Millisecond), bound,
		base, during.Load(), after)
	if d := during.Load(); d > int64(base+16*writers+slack) {
		t.Errorf("%d goroutines during the outage, base %d: requests pile up", d, base)
	}

	wl.readAllBack(t, g, bearer)
}
