package faults

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeLog is what concurrent clients saw: every acknowledged (2xx) write, and the 503s.
type writeLog struct {
	mu     sync.Mutex
	quotes []quote
	sess   []gwSession
	// acked counts 2xx answers (writes and reads); refused counts 503 problems; slowest is
	// the longest any 503 took.
	refused atomic.Int64
	acked   atomic.Int64
	slowest atomic.Int64 // nanoseconds
}

// writer is one client loop creating quotes (even w) or sessions (odd w), one attempt at a
// time, never retrying: a 2xx is recorded as acknowledged; anything else must be a 503 problem
// answered within bound, else it is a violation.
func writer(g *gateway, l *load, wl *writeLog, bearer string, w int, bound time.Duration) {
	for i := 0; i < maxLoops && !l.stopped(); i++ {
		var r reply
		var err error
		if w%2 == 0 {
			var q quote
			q, r, err = g.createQuote(bearer, "customer-"+strconv.Itoa(w)+"-"+strconv.Itoa(i))
			if err == nil {
				wl.mu.Lock()
				wl.quotes = append(wl.quotes, q)
				wl.mu.Unlock()
			}
		} else {
			var s gwSession
			// A user each: sessions past the per-user cap (50) would evict the oldest, which
			// would then read as lost.
			s, r, err = g.createSession(bearer, "user-"+strconv.Itoa(w)+"-"+strconv.Itoa(i))
			if err == nil {
				wl.mu.Lock()
				wl.sess = append(wl.sess, s)
				wl.mu.Unlock()
			}
		}
		wl.record(l, r, err, bound)
	}
}

// record scores one reply of a writer or reader.
func (wl *writeLog) record(l *load, r reply, err error, bound time.Duration) {
	l.attempts.Add(1)
	if err == nil {
		wl.acked.Add(1)
		return
	}
	if uerr := r.unavailable(); uerr != nil {
		l.violate("%v", err)
		return
	}
	wl.refused.Add(1)
	for {
		old := wl.slowest.Load()
		if int64(r.took) <= old || wl.slowest.CompareAndSwap(old, int64(r.took)) {
			break
		}
	}
	if r.took > bound {
		l.violate("a 503 took %v, more than the %v bound: %s", r.took.Round(time.Millisecond), bound, r)
	}
}

// readAllBack checks every acknowledged write is there, whole.
func (wl *writeLog) readAllBack(t *testing.T, g *gateway, bearer string) {
	t.Helper()
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for _, q := range wl.quotes {
		if _, err := g.getQuote(bearer, q); err != nil {
			t.Errorf("acknowledged quote lost: %v", err)
		}
	}
	for _, s := range wl.sess {
		if _, err := g.getSession(bearer, s); err != nil {
			t.Errorf("acknowledged session lost: %v", err)
		}
		if _, err := g.authorize(s); err != nil {
			t.Errorf("acknowledged session does not authorize: %v", err)
		}
	}
	t.Logf("read back %d acknowledged quotes and %d acknowledged sessions", len(wl.quotes), len(wl.sess))
}

// checkReadyz asserts /readyz answers a 503 problem with Retry-After within bound.
func (g *gateway) checkReadyz503(t *testing.T, bound time.Duration) {
	t.Helper()
	r := g.do("GET", "/readyz", nil)
	if err := r.unavailable(); err != nil {
		t.Fatalf("readyz while Redis is down: %v", err)
	}
	if r.took > bound {
		t.Fatalf("readyz took %v, more than the %v bound", r.took, bound)
	}
}

// waitReady polls /readyz until it answers 200.
func (g *gateway) waitReady(t *testing.T, within time.Duration) {
	t.Helper()
	pollUntil(t, within, "/readyz answering 200", func() bool { return g.do("GET", "/readyz", nil).status == http.StatusOK })
}

// settledGoroutines closes idle client connections and polls until the process's goroutine
// count is at most limit (limit < 0: until it stops changing), returning the count.
func (g *gateway) settledGoroutines(t *testing.T, limit int, within time.Duration) int {
	t.Helper()
	last := -1
	n := 0
	pollUntil(t, within, "the goroutine count settling", func() bool {
		g.client.CloseIdleConnections()
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
		if limit >= 0 {
			return n <= limit
		}
		stable := n == last
		last = n
		return stable
	})
	return n
}
