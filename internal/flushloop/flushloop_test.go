package flushloop

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoopLogsOutageOnceAndFlushesLast: a run of failing flushes is logged once when it starts
// and once when flushing recovers; a wake flushes at once; the housekeeping runs after each
// flush; the last flush, after the context ends, is marked final and still has a deadline.
func TestLoopLogsOutageOnceAndFlushesLast(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		calls   int
		final   bool
		dl      bool
		after   int
		logs    bytes.Buffer
		flushed = make(chan struct{}, 100)
	)
	fail := map[int]bool{2: true, 3: true, 4: true} // the 2nd..4th flush fail
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop{Every: time.Hour, Wake: wake, Log: slog.New(slog.NewTextHandler(&logs, nil)),
			Failing: "counts not sent", Recovered: "counts sent again",
			Flush: func(ctx context.Context, last bool) error {
				mu.Lock()
				defer mu.Unlock()
				if last {
					final = true
					_, dl = ctx.Deadline()
					return ctx.Err()
				}
				calls++
				flushed <- struct{}{}
				if fail[calls] {
					return errors.New("redis down")
				}
				return nil
			},
			After: func() { mu.Lock(); after++; mu.Unlock() },
		}.Run(ctx)
	}()
	for range 6 { // six wakes, an hour-long tick: every flush here is a wake's
		wake <- struct{}{}
		<-flushed
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	out := logs.String()
	if calls != 6 || !final || !dl {
		t.Fatalf("calls %d, final %v (deadline %v)", calls, final, dl)
	}
	if after != 6 {
		t.Errorf("housekeeping ran %d times after 6 flushes", after)
	}
	if strings.Count(out, "counts not sent") != 1 || strings.Count(out, "counts sent again") != 1 ||
		!strings.Contains(out, "redis down") {
		t.Errorf("logs:\n%s", out)
	}
}
