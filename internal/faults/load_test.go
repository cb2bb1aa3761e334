package faults

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// load runs concurrent client loops against a gateway and keeps score. An operation whose
// attempt fails with a 503 problem is retried (after retryBackoff, not after the Retry-After
// second: the tests measure failure runs finely); any other failure is a violation. A failure
// run is the time from an operation's first failed attempt to the end of its successful one.
type load struct {
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	attempts    atomic.Int64
	successes   atomic.Int64
	unavailable atomic.Int64

	mu         sync.Mutex
	violations []string
	longest    time.Duration
	longestOp  string
	runs       int            // failure runs that ended in a success
	refusals   map[string]int // 503 answers by operation
	tries      map[string]int // attempts by operation
	oks        map[string]int // successes by operation
}

const (
	retryBackoff  = 10 * time.Millisecond
	maxViolations = 20
)

func newLoad(t *testing.T) *load {
	l := &load{stop: make(chan struct{}), refusals: map[string]int{}, tries: map[string]int{}, oks: map[string]int{}}
	t.Cleanup(l.halt)
	return l
}

// spawn starts a client loop; body runs until stopped() or it returns.
func (l *load) spawn(body func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		body()
	}()
}

// halt stops every loop and waits for them.
func (l *load) halt() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *load) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *load) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.violations) < maxViolations {
		l.violations = append(l.violations, fmt.Sprintf(format, args...))
	}
}

// run performs op until it succeeds, retrying 503 problems. op returns the reply and nil when
// the reply is the expected success (checked by op), or an error saying what was wrong.
// run reports whether the operation succeeded; it gives up when the load is stopped or the
// hang guard passes (a violation).
func (l *load) run(name string, op func() (reply, error)) bool {
	var first time.Time
	for {
		r, err := op()
		l.attempts.Add(1)
		l.mu.Lock()
		l.tries[name]++
		l.mu.Unlock()
		if err == nil {
			l.successes.Add(1)
			l.mu.Lock()
			l.oks[name]++
			l.mu.Unlock()
			if !first.IsZero() {
				l.endRun(name, time.Since(first))
			}
			return true
		}
		if uerr := r.unavailable(); uerr != nil {
			l.violate("%s: %v", name, err)
			return false
		}
		l.unavailable.Add(1)
		l.mu.Lock()
		l.refusals[name]++
		l.mu.Unlock()
		if first.IsZero() {
			first = r.start
		}
		if time.Since(first) > hangGuard {
			l.violate("%s: still failing after %v: %v", name, hangGuard, err)
			return false
		}
		if l.stopped() {
			l.endRun(name+" (unfinished when stopped)", time.Since(first))
			return false
		}
		time.Sleep(retryBackoff)
	}
}

func (l *load) endRun(name string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs++
	if d > l.longest {
		l.longest, l.longestOp = d, name
	}
}

// waitEach polls until every named operation has been attempted (or, with ok, has succeeded)
// at least once more than at the call, so each state a test steps through is seen by every
// kind of request.
func (l *load) waitEach(t *testing.T, within time.Duration, ok bool, names ...string) {
	t.Helper()
	count := l.tries
	if ok {
		count = l.oks
	}
	l.mu.Lock()
	from := make(map[string]int, len(names))
	for _, n := range names {
		from[n] = count[n]
	}
	l.mu.Unlock()
	pollUntil(t, within, fmt.Sprintf("one more attempt (ok: %v) of each of %v", ok, names), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, n := range names {
			if count[n] <= from[n] {
				return false
			}
		}
		return true
	})
}

// check fails the test with every violation seen.
func (l *load) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range l.violations {
		t.Error(v)
	}
}
