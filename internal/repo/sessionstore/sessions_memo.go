package sessionstore

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
//     connection): a session's own hash (<prefix>:v1:sess:{<tag>}:<part>, the per-session
//     layout) drops that session, the user's hash (<prefix>:v1:sess:{<tag>}, the per-user
//     layout, where every session of the user is a field of one key) drops every session of
//     the tag; everything is dropped when rueidis starts afresh (a lost connection or a
//     FLUSHALL);
//   - an entry lives at most the cache TTL from the read that filled it, so staleness stays
//     bounded even if a push is lost;
//   - a read stores its result only if no invalidation for its user (or for everything)
//     arrived since the read began: a push that overtakes the decoding cannot be undone by it.
//
// Entries are grouped by the user's tag (a push for the user's hash finds them all at once)
// in a map sharded by tag: a plain Go map per shard under a read-write lock, which a lookup
// among a million users reaches in fewer cache misses than a sync.Map's trie. A user's group
// is a copy-on-write slice, so a hit takes only its shard's read lock. The version check is
// striped by tag (a push for another user of the same stripe also blocks a store); that only
// costs a lost memo fill, never a stale entry.
type authMemo struct {
	keyPrefix string
	max       int64
	seed      maphash.Seed

	users [memoShards]memoShard // by tag
	n     atomic.Int64
	swept atomic.Int64 // unix nanos of the last sweep

	epoch   atomic.Uint64 // bumped when everything is invalidated
	stripes [memoStripes]atomic.Uint64
}

const (
	memoStripes = 1024
	memoShards  = 256
)

// memoShard is the users whose tag hashes to it.
type memoShard struct {
	mu sync.RWMutex
	m  map[string]*memoUser
	_  [64 - 32]byte // one cache line each: a shard's lock is not its neighbour's
}

// memoUser is the kept sessions of one user (most users have one). parts is replaced, never
// changed in place, under mu; a user whose group was removed from users is dead (a put that
// loaded it before starts again with a new group).
type memoUser struct {
	mu    sync.Mutex
	dead  bool
	parts atomic.Pointer[[]memoPart]
}

type memoPart struct {
	part string
	e    *memoEntry
}

// memoEntry is one decoded session: what the hot path decides with, kept compact (about a
// quarter of a full view), and the full view when a read that needed it ("who am I") filled
// the entry.
type memoEntry struct {
	hot hotSession
	// view is the session's full view, nil when the entry was filled by a read of the hot
	// fields only.
	view  *session.Session
	until time.Time
	// derived is what the hot path's callers keep with this copy (forward auth's assertion).
	derived session.Derived
}

// memoVersion is what a read records before it starts, for put.
type memoVersion struct{ epoch, stripe uint64 }

// newAuthMemo keeps at most max sessions whose keys start with keyPrefix
// ("<prefix>:v1:sess:{"); past it new sessions are not kept (read from Redis on each request).
func newAuthMemo(keyPrefix string, max int64) *authMemo {
	m := &authMemo{keyPrefix: keyPrefix, max: max, seed: maphash.MakeSeed()}
	for i := range m.users {
		m.users[i].m = map[string]*memoUser{}
	}
	return m
}

// shard is the shard of the user with tag.
func (m *authMemo) shard(tag string) *memoShard {
	return &m.users[maphash.String(m.seed, tag)%memoShards]
}

// user is the group of the user with tag.
func (m *authMemo) user(tag string) (*memoUser, bool) {
	sh := m.shard(tag)
	sh.mu.RLock()
	u, ok := sh.m[tag]
	sh.mu.RUnlock()
	return u, ok
}

// userOrNew is the group of the user with tag, a new one if there is none. The memo keeps its
// own copy of a tag (and store of a part): the caller's strings are slices of larger ones (the
// tag of the request's 60-byte token), which a kept entry would otherwise hold on to.
func (m *authMemo) userOrNew(tag string) *memoUser {
	if u, ok := m.user(tag); ok {
		return u
	}
	sh := m.shard(tag)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	u, ok := sh.m[tag]
	if !ok {
		u = &memoUser{}
		sh.m[strings.Clone(tag)] = u // (the caller's tag is a slice of the request's token)
	}
	return u
}

// forget removes the group of the user with tag if it is still u.
func (m *authMemo) forget(tag string, u *memoUser) {
	sh := m.shard(tag)
	sh.mu.Lock()
	if sh.m[tag] == u {
		delete(sh.m, tag)
	}
	sh.mu.Unlock()
}

// eachUser calls f with every group, each shard's taken as it stands (f may change the memo).
func (m *authMemo) eachUser(f func(tag string, u *memoUser)) {
	type kv struct {
		tag string
		u   *memoUser
	}
	var batch []kv
	for i := range m.users {
		sh := &m.users[i]
		sh.mu.RLock()
		batch = batch[:0]
		for tag, u := range sh.m {
			batch = append(batch, kv{tag, u})
		}
		sh.mu.RUnlock()
		for _, e := range batch {
			f(e.tag, e.u)
		}
	}
}

// keyOf is what a session key names: the tag and part of "<keyPrefix><tag>}:<part>" (a
// session's hash), or the tag alone of "<keyPrefix><tag>}" (the user's hash, part "").
func (m *authMemo) keyOf(key string) (tag, part string, ok bool) {
	rest, ok := strings.CutPrefix(key, m.keyPrefix)
	if !ok {
		return "", "", false
	}
	if tag, ok := strings.CutSuffix(rest, "}"); ok && tag != "" && !strings.Contains(tag, "}") {
		return tag, "", true
	}
	tag, part, ok = strings.Cut(rest, "}:")
	if !ok || tag == "" || part == "" {
		return "", "", false
	}
	return tag, part, true
}

// stripe is the version counter of the user with tag: every push for one of the user's keys
// (the user's hash or one session's) bumps it.
func (m *authMemo) stripe(tag string) *atomic.Uint64 {
	return &m.stripes[maphash.String(m.seed, tag)%memoStripes]
}

// version is taken before the read whose result put may store.
func (m *authMemo) version(key session.Ref) memoVersion {
	return memoVersion{epoch: m.epoch.Load(), stripe: m.stripe(key.Tag).Load()}
}

// get returns the live entry for key.
func (m *authMemo) get(key session.Ref, now time.Time) (*memoEntry, bool) {
	u, ok := m.user(key.Tag)
	if !ok {
		return nil, false
	}
	ps := u.parts.Load()
	if ps == nil {
		return nil, false
	}
	for i := range *ps {
		if p := &(*ps)[i]; p.part == key.Part {
			if !now.Before(p.e.until) {
				m.remove(key, p.e)
				return nil, false
			}
			return p.e, true
		}
	}
	return nil, false
}

// put stores e for key unless an invalidation for its user arrived since v was taken.
func (m *authMemo) put(key session.Ref, e *memoEntry, v memoVersion, now time.Time) {
	if m.n.Load() >= m.max {
		m.sweep(now)
		if m.n.Load() >= m.max {
			return
		}
	}
	for !m.store(m.userOrNew(key.Tag), key.Part, e) {
	}
	// Checked after storing, so an invalidation that lands between the check and the store
	// is not missed: either it dropped the entry after the store, or the check sees it.
	if m.epoch.Load() != v.epoch || m.stripe(key.Tag).Load() != v.stripe {
		m.remove(key, e)
	}
}

// store puts e for part into u; false when u is dead (removed meanwhile: start again).
func (m *authMemo) store(u *memoUser, part string, e *memoEntry) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dead {
		return false
	}
	var old []memoPart
	if ps := u.parts.Load(); ps != nil {
		old = *ps
	}
	next := make([]memoPart, 0, len(old)+1)
	replaced := false
	for _, p := range old {
		if p.part == part {
			p.e, replaced = e, true
		}
		next = append(next, p)
	}
	if !replaced {
		next = append(next, memoPart{part: strings.Clone(part), e: e})
		m.n.Add(1)
	}
	u.parts.Store(&next)
	return true
}

// remove drops key's entry if it is still e (any entry when e is nil); a user left with none
// is removed.
func (m *authMemo) remove(key session.Ref, e *memoEntry) {
	u, ok := m.user(key.Tag)
	if !ok {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	ps := u.parts.Load()
	if u.dead || ps == nil {
		return
	}
	next := make([]memoPart, 0, len(*ps))
	for _, p := range *ps {
		if p.part == key.Part && (e == nil || p.e == e) {
			m.n.Add(-1)
			continue
		}
		next = append(next, p)
	}
	if len(next) == len(*ps) {
		return
	}
	if len(next) == 0 {
		u.parts.Store(nil) // (counted above)
		m.kill(key.Tag, u)
		return
	}
	u.parts.Store(&next)
}

// kill removes u (held locked) and its entries.
func (m *authMemo) kill(tag string, u *memoUser) {
	u.dead = true
	m.forget(tag, u)
	if ps := u.parts.Swap(nil); ps != nil {
		m.n.Add(-int64(len(*ps)))
	}
}

// dropUser removes every entry of the user with tag.
func (m *authMemo) dropUser(tag string) {
	u, ok := m.user(tag)
	if !ok {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.dead {
		m.kill(tag, u)
	}
}

// invalidate drops keys (everything when all): rueidis' invalidation callback.
func (m *authMemo) invalidate(keys []string, all bool) {
	if all {
		m.epoch.Add(1)
		m.eachUser(func(tag string, _ *memoUser) { m.dropUser(tag) })
		return
	}
	for _, k := range keys {
		tag, part, ok := m.keyOf(k)
		if !ok {
			continue // not a session key
		}
		m.stripe(tag).Add(1)
		if part == "" {
			m.dropUser(tag)
		} else {
			m.remove(session.Ref{Tag: tag, Part: part}, nil)
		}
	}
}

// sweep drops expired entries, at most once a second.
func (m *authMemo) sweep(now time.Time) {
	last := m.swept.Load()
	if now.UnixNano()-last < int64(time.Second) || !m.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	m.eachUser(func(tag string, u *memoUser) {
		ps := u.parts.Load()
		if ps == nil {
			return
		}
		for _, p := range *ps {
			if !now.Before(p.e.until) {
				m.remove(session.Ref{Tag: tag, Part: p.part}, p.e)
			}
		}
	})
}
