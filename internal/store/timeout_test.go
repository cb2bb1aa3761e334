package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestLazyDeadlineFiresWhenWaitedOn(t *testing.T) {
	t.Parallel()
	c := &timeoutClient{d: 50 * time.Millisecond}
	ctx, release := c.boundLazily(context.Background())
	defer release()
	l, ok := ctx.(*lazyDeadline)
	if !ok {
		t.Fatalf("got %T, want a lazy deadline", ctx)
	}
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) > 50*time.Millisecond || time.Until(dl) < 0 {
		t.Fatalf("Deadline() = %v, %v; want within the next 50ms", dl, ok)
	}
	if l.cancel != nil {
		t.Fatal("reading the deadline armed a timer")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
	}
}

func TestLazyDeadlineFollowsParentAndValues(t *testing.T) {
	t.Parallel()
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	c := &timeoutClient{d: time.Hour}
	ctx, release := c.boundLazily(parent)
	defer release()
	if ctx.Value(key{}) != "v" {
		t.Fatal("value of the parent lost")
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("parent's cancellation not seen")
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want Canceled", ctx.Err())
	}
}

func TestLazyDeadlineKeepsAnEarlierParentDeadline(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	c := &timeoutClient{d: time.Hour}
	ctx, release := c.boundLazily(parent)
	defer release()
	if ctx != parent {
		t.Fatalf("an earlier deadline on the parent was replaced by %T", ctx)
	}
}

func TestLazyDeadlineReleaseWithoutWaiting(t *testing.T) {
	t.Parallel()
	c := &timeoutClient{d: time.Hour}
	ctx, release := c.boundLazily(context.Background())
	release()
	if ctx.(*lazyDeadline).cancel != nil {
		t.Fatal("release armed a timer")
	}
	// After the call nothing should wait, but a late look must not panic.
	if ctx.Err() != nil {
		t.Fatalf("Err() after release = %v", ctx.Err())
	}
}

func TestSharedDeadlineBoundsEveryCall(t *testing.T) {
	t.Parallel()
	const d = 40 * time.Millisecond
	c := WithTimeout(nil, d).(*timeoutClient)
	start := time.Now()
	ctx := c.bound(context.Background())
	end := time.Now()
	dl, ok := ctx.Deadline()
	if !ok || dl.After(end.Add(d)) || !dl.After(start.Add(d-d/deadlineSlices)) {
		t.Fatalf("Deadline() = %v, %v; want within (d − d/%d, d] of the call's start", dl.Sub(start), ok, deadlineSlices)
	}
	if ctx.Err() != nil {
		t.Fatalf("Err() before the deadline = %v", ctx.Err())
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	if time.Now().Before(dl) {
		t.Fatalf("Done closed %v before the deadline", dl.Sub(time.Now()))
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
	}
	// A call starting after the shared deadline passed gets a new one, never a past one.
	ctx2 := c.bound(context.Background())
	if ctx2.Err() != nil {
		t.Fatalf("a new call's Err() = %v", ctx2.Err())
	}
	if dl2, _ := ctx2.Deadline(); !dl2.After(time.Now()) {
		t.Fatalf("a new call got a deadline %v in the past", time.Since(dl2))
	}
}

func TestSharedDeadlineIsShared(t *testing.T) {
	t.Parallel()
	c := WithTimeout(nil, time.Hour).(*timeoutClient)
	a, b := c.bound(context.Background()), c.bound(context.Background())
	if a.Done() != b.Done() {
		t.Fatal("two calls a moment apart got two timers")
	}
}

func TestSharedDeadlineKeepsParentValuesAndEarlierDeadline(t *testing.T) {
	t.Parallel()
	type key struct{}
	c := WithTimeout(nil, time.Hour).(*timeoutClient)
	ctx := c.bound(context.WithValue(context.Background(), key{}, "v"))
	if ctx.Value(key{}) != "v" {
		t.Fatal("value of the parent lost")
	}
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.bound(parent) != parent {
		t.Fatal("an earlier deadline on the parent was replaced")
	}
}

func TestSharedDeadlineSeesACancelledCaller(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	c := WithTimeout(nil, time.Hour).(*timeoutClient)
	ctx := c.bound(parent)
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want Canceled", ctx.Err())
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done of a cancelled caller is open")
	}
}

func TestSharedDeadlineConcurrent(t *testing.T) {
	t.Parallel()
	const d = 5 * time.Millisecond
	c := WithTimeout(nil, d).(*timeoutClient)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				start := time.Now()
				ctx := c.bound(context.Background())
				end := time.Now()
				dl, _ := ctx.Deadline()
				if dl.After(end.Add(d)) || !dl.After(start.Add(d-d/deadlineSlices)) {
					t.Errorf("deadline %v after the call's start, want within (d − d/%d, d]", dl.Sub(start), deadlineSlices)
					return
				}
			}
		}()
	}
	wg.Wait()
}
