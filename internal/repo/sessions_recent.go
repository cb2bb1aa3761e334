package repo

import (
	"sync"
	"sync/atomic"
	"time"
)

// recentWrites gives this gateway read-your-writes over the client-side cache. Redis sends the
// invalidation push for a write after the write's reply, and on whichever connection tracked
// the read, so right after a logout, revoke, rotate or MFA step, a request on the same gateway
// could still find the old copy in the cache for a moment. Every session write marks the
// session (or, for revoke-all, the whole user) before it runs; for one cache TTL a cached copy
// of a marked session is not trusted and the hot path reads Redis instead. Copies live at most
// a cache TTL, so after that the mark has nothing left to guard against.
//
// Other gateways learn of the write from the push alone; their staleness is bounded by the
// push's latency, or by the cache TTL should a push be lost.
type recentWrites struct {
	ttl  time.Duration
	m    sync.Map // recentKey → time.Time (until when the mark holds)
	live atomic.Int64
}

// recentKey marks one session (part set) or every session of a user (part empty).
type recentKey struct{ tag, part string }

// mark guards the session ref (every session of ref.Tag when ref.Part is empty) from now on.
func (w *recentWrites) mark(ref SessionRef, now time.Time) {
	if w == nil {
		return
	}
	if _, loaded := w.m.Swap(recentKey{ref.Tag, ref.Part}, now.Add(w.ttl)); !loaded {
		w.live.Add(1)
	}
	if w.live.Load() > 1024 {
		w.sweep(now)
	}
}

// marked reports whether a cached copy of ref must not be trusted at now.
func (w *recentWrites) marked(ref SessionRef, now time.Time) bool {
	if w == nil || w.live.Load() == 0 { // the common case: nothing written lately
		return false
	}
	return w.check(recentKey{ref.Tag, ref.Part}, now) || w.check(recentKey{tag: ref.Tag}, now)
}

func (w *recentWrites) check(k recentKey, now time.Time) bool {
	v, ok := w.m.Load(k)
	if !ok {
		return false
	}
	if now.Before(v.(time.Time)) {
		return true
	}
	if w.m.CompareAndDelete(k, v) {
		w.live.Add(-1)
	}
	return false
}

// sweep drops expired marks (a burst of writes leaves many behind).
func (w *recentWrites) sweep(now time.Time) {
	w.m.Range(func(k, v any) bool {
		if !now.Before(v.(time.Time)) && w.m.CompareAndDelete(k, v) {
			w.live.Add(-1)
		}
		return true
	})
}
