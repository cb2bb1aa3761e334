package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// timeoutClient bounds every call with a deadline, so a dead or paused Redis never makes a
// request hang. An earlier deadline already on ctx wins.
type timeoutClient struct {
	rueidis.Client
	d         time.Duration
	deadlines deadlines
}

// WithTimeout decorates c so every Do/DoMulti/DoCache call has at most d.
func WithTimeout(c rueidis.Client, d time.Duration) rueidis.Client {
	return &timeoutClient{Client: c, d: d, deadlines: deadlines{d: d, slice: d / deadlineSlices}}
}

// bound is ctx with the call's deadline: ctx itself when its own deadline comes first, else
// one shared with the calls that started about the same time (deadlines).
func (c *timeoutClient) bound(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= c.d {
		return ctx
	}
	return &sharedDeadline{Context: ctx, dl: c.deadlines.next()}
}

// Do and DoMulti pin their commands, so rueidis never recycles them: it puts a command back in
// its pool once the reply is in, while its connection's writer goroutine read the command
// before writing it, with no happens-before edge the race detector can see (the ordering goes
// through the server). TestRobustness's partitions under -race reported exactly that. The
// cost is one command buffer per call left to the garbage collector; the hot path's cached
// reads (DoCache) keep the pool.
func (c *timeoutClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return c.Client.Do(c.bound(ctx), cmd.Pin())
}

func (c *timeoutClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	for i := range multi {
		multi[i] = multi[i].Pin()
	}
	return c.Client.DoMulti(c.bound(ctx), multi...)
}

// deadlineSlices is how many deadlines a timeout's span holds at most: a call's deadline is
// between d·(1 − 1/deadlineSlices) and d after it starts.
const deadlineSlices = 32

// deadlines are the per-call deadlines of a timeoutClient, shared: a context.WithTimeout per
// call (a timer armed and stopped, a context registered with its parent and removed, seven
// allocations) was most of what a call cost beside its round trip. Every call that starts
// within one slice (d/deadlineSlices) of the newest deadline's start shares it, so at most
// deadlineSlices timers are live, one started per slice that saw a call. A call's deadline is
// thus at most d and more than d − slice after its start.
type deadlines struct {
	d, slice time.Duration
	cur      atomic.Pointer[deadline]
	mu       sync.Mutex
}

// deadline is one shared deadline: done is closed when it passes.
type deadline struct {
	at   time.Time
	done chan struct{}
}

// next is the deadline of a call starting now.
func (ds *deadlines) next() *deadline {
	now := time.Now()
	floor := now.Add(ds.d - ds.slice)
	if dl := ds.cur.Load(); dl != nil && dl.at.After(floor) {
		return dl
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if dl := ds.cur.Load(); dl != nil && dl.at.After(floor) {
		return dl
	}
	dl := &deadline{at: now.Add(ds.d), done: make(chan struct{})}
	time.AfterFunc(ds.d, func() { close(dl.done) })
	ds.cur.Store(dl)
	return dl
}

// sharedDeadline is the caller's context under a shared deadline: Done is the deadline's;
// Err is DeadlineExceeded once it passed, else the caller's own (so a call whose caller is
// already gone is not sent: rueidis checks Err first). Values come from the caller's context.
//
// A caller cancelled while its call waits for the reply is not seen before the reply or the
// deadline (a Go context cannot wait on two channels without a goroutine or a registration
// with its parent, which is the cost this saves); the call then ends as a call of a caller
// that stayed would have.
type sharedDeadline struct {
	context.Context
	dl *deadline
}

func (s *sharedDeadline) Deadline() (time.Time, bool) { return s.dl.at, true }

func (s *sharedDeadline) Done() <-chan struct{} {
	if s.Context.Err() != nil {
		return s.Context.Done()
	}
	return s.dl.done
}

func (s *sharedDeadline) Err() error {
	select {
	case <-s.dl.done:
		return context.DeadlineExceeded
	default:
		return s.Context.Err()
	}
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
