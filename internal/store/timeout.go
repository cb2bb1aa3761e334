package store

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// timeoutClient bounds every call with a deadline, so a dead or paused Redis never makes a
// request hang. An earlier deadline already on ctx wins.
type timeoutClient struct {
	rueidis.Client
	d time.Duration
}

// WithTimeout decorates c so every Do/DoMulti/DoCache call has at most d.
func WithTimeout(c rueidis.Client, d time.Duration) rueidis.Client {
	return &timeoutClient{Client: c, d: d}
}

func (c *timeoutClient) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= c.d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.d)
}

func (c *timeoutClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.Do(ctx, cmd)
}

func (c *timeoutClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.DoMulti(ctx, multi...)
}

// DoCache bounds the call like Do, but arms the deadline's timer only when the call waits: a
// client-side cache hit is answered from memory before rueidis looks at ctx at all, and the
// timer would be most of what such a call costs.
func (c *timeoutClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	ctx, release := c.boundLazily(ctx)
	defer release()
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c *timeoutClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	ctx, release := c.boundLazily(ctx)
	defer release()
	return c.Client.DoMultiCache(ctx, multi...)
}

func (c *timeoutClient) boundLazily(ctx context.Context) (context.Context, func()) {
	dl := time.Now().Add(c.d)
	if pdl, ok := ctx.Deadline(); ok && !pdl.After(dl) {
		return ctx, func() {}
	}
	l := &lazyDeadline{Context: ctx, deadline: dl}
	return l, l.release
}

// lazyDeadline is ctx with a deadline whose timer starts on the first Done or Err: its
// Deadline is set from the start (so a caller that only reads the deadline, or never waits,
// costs no timer), and anything that waits gets a real context.WithDeadline. Values come from
// the parent.
type lazyDeadline struct {
	context.Context
	deadline time.Time
	once     sync.Once
	armed    context.Context
	cancel   context.CancelFunc
}

func (l *lazyDeadline) Deadline() (time.Time, bool) { return l.deadline, true }

func (l *lazyDeadline) arm() context.Context {
	l.once.Do(func() { l.armed, l.cancel = context.WithDeadline(l.Context, l.deadline) })
	return l.armed
}

func (l *lazyDeadline) Done() <-chan struct{} { return l.arm().Done() }

func (l *lazyDeadline) Err() error { return l.arm().Err() }

// release ends the call: it stops the timer if one was armed. Past it nothing waits on the
// context any more; a late Done or Err then sees the parent's.
func (l *lazyDeadline) release() {
	l.once.Do(func() { l.armed = l.Context })
	if l.cancel != nil {
		l.cancel()
	}
}
