package repo

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// authMemo keeps the decoded form of the sessions the hot path read, so a hot session is
// answered without a call into the Redis client at all: no command to build, no cache lookup,
// no decoding. Under broadcast tracking it is the only copy (filled by plain reads); under
// default tracking it sits on top of rueidis' cache, which the reads go through. Either way:
//
//   - an entry is dropped when Redis's invalidation push for its key arrives (on any tracking
//     connection), and everything is dropped when rueidis starts afresh (a lost connection or
//     a FLUSHALL);
//   - an entry lives at most the cache TTL from the read that filled it, so staleness stays
//     bounded even if a push is lost;
//   - a read stores its result only if no invalidation for its key (or for everything) arrived
//     since the read began: a push that overtakes the decoding cannot be undone by it.
//
// The version check is striped (a push for another key of the same stripe also blocks a
// store); that only costs a lost memo fill, never a stale entry.
type authMemo struct {
	keyPrefix string
	max       int64
	seed      maphash.Seed

	m     sync.Map // session.Ref → *memoEntry
	n     atomic.Int64
	swept atomic.Int64 // unix nanos of the last sweep

	epoch   atomic.Uint64 // bumped when everything is invalidated
	stripes [memoStripes]atomic.Uint64
}

const memoStripes = 1024

// memoEntry is one decoded session: what the hot path decides with, kept compact (about a
// quarter of a full view), and the full view when a read that needed it ("who am I") filled
// the entry.
type memoEntry struct {
	hot hotSession
	// view is the session's full view, nil when the entry was filled by a read of the hot
	// fields only.
	view  *session.Session
	until time.Time
}

// memoVersion is what a read records before it starts, for put.
type memoVersion struct{ epoch, stripe uint64 }

// newAuthMemo keeps at most max sessions whose keys start with keyPrefix
// ("<prefix>:v1:sess:{"); past it new sessions are not kept (read from Redis on each request).
func newAuthMemo(keyPrefix string, max int64) *authMemo {
	return &authMemo{keyPrefix: keyPrefix, max: max, seed: maphash.MakeSeed()}
}

// refOf is the reference a session key names: "<keyPrefix><tag>}:<part>".
func (m *authMemo) refOf(key string) (session.Ref, bool) {
	rest, ok := strings.CutPrefix(key, m.keyPrefix)
	if !ok {
		return session.Ref{}, false
	}
	tag, part, ok := strings.Cut(rest, "}:")
	if !ok || tag == "" || part == "" {
		return session.Ref{}, false
	}
	return session.Ref{Tag: tag, Part: part}, true
}

// The memo is keyed by the session's reference; invalidation pushes name Redis keys, which
// end in the reference's part (…:{<tag>}:<part>). Stripes are chosen by the part alone, so a
// key and its reference always land on the same stripe.
func (m *authMemo) stripe(part string) *atomic.Uint64 {
	return &m.stripes[maphash.String(m.seed, part)%memoStripes]
}

// version is taken before the read whose result put may store.
func (m *authMemo) version(key session.Ref) memoVersion {
	return memoVersion{epoch: m.epoch.Load(), stripe: m.stripe(key.Part).Load()}
}

// get returns the live entry for key.
func (m *authMemo) get(key session.Ref, now time.Time) (*memoEntry, bool) {
	v, ok := m.m.Load(key)
	if !ok {
		return nil, false
	}
	e := v.(*memoEntry)
	if !now.Before(e.until) {
		if m.m.CompareAndDelete(key, v) {
			m.n.Add(-1)
		}
		return nil, false
	}
	return e, true
}

// put stores e for key unless an invalidation for it arrived since v was taken.
func (m *authMemo) put(key session.Ref, e *memoEntry, v memoVersion, now time.Time) {
	if m.n.Load() >= m.max {
		m.sweep(now)
		if m.n.Load() >= m.max {
			return
		}
	}
	if _, loaded := m.m.Swap(key, e); !loaded {
		m.n.Add(1)
	}
	// Checked after storing, so an invalidation that lands between the check and the store
	// is not missed: either it deleted the entry after the store, or the check sees it.
	if m.epoch.Load() != v.epoch || m.stripe(key.Part).Load() != v.stripe {
		if m.m.CompareAndDelete(key, e) {
			m.n.Add(-1)
		}
	}
}

// invalidate drops keys (everything when all): rueidis' invalidation callback.
func (m *authMemo) invalidate(keys []string, all bool) {
	if all {
		m.epoch.Add(1)
		m.m.Range(func(k, v any) bool {
			if m.m.CompareAndDelete(k, v) {
				m.n.Add(-1)
			}
			return true
		})
		return
	}
	for _, k := range keys {
		ref, ok := m.refOf(k)
		if !ok {
			continue // not a session key
		}
		m.stripe(ref.Part).Add(1)
		if v, ok := m.m.LoadAndDelete(ref); ok && v != nil {
			m.n.Add(-1)
		}
	}
}

// sweep drops expired entries, at most once a second.
func (m *authMemo) sweep(now time.Time) {
	last := m.swept.Load()
	if now.UnixNano()-last < int64(time.Second) || !m.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	m.m.Range(func(k, v any) bool {
		if !now.Before(v.(*memoEntry).until) && m.m.CompareAndDelete(k, v) {
			m.n.Add(-1)
		}
		return true
	})
}
