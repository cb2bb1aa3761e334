package store

import (
	"context"
	"errors"
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
