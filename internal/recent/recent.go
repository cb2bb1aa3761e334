// Package recent gives a gateway read-your-writes over rueidis' client-side cache: the services
// mark the objects they change, and for one cache TTL a cached copy of a marked object is not
// trusted.
package recent

import (
	"sync"
	"sync/atomic"
	"time"
)

// Writes gives this gateway read-your-writes over the client-side cache. Redis sends the
// invalidation push for a write after the write's reply, and on whichever connection tracked
// the read, so right after a logout, revoke, rotate or MFA step (or a token revocation), a
// request on the same gateway could still find the old copy in the cache for a moment. Every
// such write marks its object (a session; every session of a user for revoke-all; a token)
// before it runs; for one cache TTL a cached copy of a marked object is not trusted and the
// hot path reads Redis instead. Copies live at most a cache TTL, so after that the mark has
// nothing left to guard against.
//
// Other gateways learn of the write from the push alone; their staleness is bounded by the
// push's latency, or by the cache TTL should a push be lost. A nil *Writes (cache off)
// marks nothing.
//
// The set is bounded (New's max): a mark that would exceed the bound is not stored; instead
// every object is distrusted until that mark would have expired (overflow), which costs reads
// from Redis, never a stale answer.
type Writes struct {
	ttl  time.Duration
	max  int64
	m    sync.Map // key → time.Time (until when the mark holds)
	live atomic.Int64
	// overflow (unix nanos): until then every object is distrusted, because a mark past the
	// bound was not stored.
	overflow atomic.Int64
	// latest is the end of the newest mark (unix nanos): past it every mark has expired and
	// the whole set is cleared at once, so a mark whose object is never read again does not
	// keep the common case off the fast path.
	latest atomic.Int64
	swept  atomic.Int64 // unix nanos of the last sweep under a steady stream of writes
}

// New returns marks that hold for ttl (the cache TTL they guard), at most max of them
// (DefaultMax when max ≤ 0).
func New(ttl time.Duration, max int) *Writes {
	if max <= 0 {
		max = DefaultMax
	}
	return &Writes{ttl: ttl, max: int64(max)}
}

// DefaultMax is New's default bound: about 100 bytes each, 6.5 MB when full.
const DefaultMax = 65536

// key marks one object (group, id), or every object of a group (id empty).
type key struct{ group, id string }

// Mark guards object id of group (every object of group when id is empty) from now on.
func (w *Writes) Mark(group, id string, now time.Time) {
	if w == nil {
		return
	}
	until := now.Add(w.ttl)
	for {
		l := w.latest.Load()
		if until.UnixNano() <= l || w.latest.CompareAndSwap(l, until.UnixNano()) {
			break
		}
	}
	k := key{group, id}
	if last := w.swept.Load(); w.live.Load() >= w.max && now.UnixNano()-last >= int64(w.ttl/8) && w.swept.CompareAndSwap(last, now.UnixNano()) {
		w.sweep(now) // at most 8 times a TTL: a full set is not walked on every write
	}
	if _, held := w.m.Load(k); !held && w.live.Load() >= w.max {
		for {
			o := w.overflow.Load()
			if until.UnixNano() <= o || w.overflow.CompareAndSwap(o, until.UnixNano()) {
				return
			}
		}
	}
	if _, loaded := w.m.Swap(k, until); !loaded {
		w.live.Add(1)
	}
	// Under a steady stream of writes the newest mark never expires: sweep at most once a
	// TTL, so the set holds about one TTL's worth of writes.
	if last := w.swept.Load(); w.live.Load() > 1024 && now.UnixNano()-last >= int64(w.ttl) && w.swept.CompareAndSwap(last, now.UnixNano()) {
		w.sweep(now)
	}
}

// Marked reports whether a cached copy of object id of group must not be trusted at now.
func (w *Writes) Marked(group, id string, now time.Time) bool {
	if w == nil || w.live.Load() == 0 && w.overflow.Load() == 0 { // the common case: nothing written lately
		return false
	}
	if o := w.overflow.Load(); o != 0 {
		if now.UnixNano() < o {
			return true
		}
		w.overflow.CompareAndSwap(o, 0)
	}
	if now.UnixNano() >= w.latest.Load() { // every mark has expired
		w.sweep(now)
		return false
	}
	return w.check(key{group, id}, now) || (id != "" && w.check(key{group: group}, now))
}

func (w *Writes) check(k key, now time.Time) bool {
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

// sweep drops expired marks; Marked runs it once the newest one has expired, so it runs at
// most once per burst of writes.
func (w *Writes) sweep(now time.Time) {
	w.m.Range(func(k, v any) bool {
		if !now.Before(v.(time.Time)) && w.m.CompareAndDelete(k, v) {
			w.live.Add(-1)
		}
		return true
	})
}
