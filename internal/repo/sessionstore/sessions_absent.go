package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// absentCache remembers, for a short time (SessionOptions.AbsentTTL), the session references
// Redis has just answered as missing, so a token repeated by a caller who holds no session (a
// scanner, a client still sending a revoked token) is refused without asking Redis again. It
// is bounded (SessionOptions.AbsentEntries: past it the oldest entry goes) and it never hides a
// session:
//
//   - a reference is a fresh token's 108-bit random selector, so no one can ask for a session's
//     reference before it is created, except by a 2^-108 chance (rotation and step-up keep the
//     reference; a token with a wrong verifier is refused as ErrWrongVerifier, never stored here);
//   - a create on this gateway bumps the version of the user's tag (created), and
//     Redis's invalidation push for the user's keys does the same for a write on another
//     gateway (when the client-side cache is on: every read that finds nothing then tracks the
//     key). An entry counts only while its tag's version (and the epoch, bumped when
//     everything is invalidated) is the one it was stored with;
//   - a miss is stored with the versions taken before its read began, so a create that lands
//     while the read is in flight already invalidates it.
//
// Only the path after the memo looks here: a session the memo holds costs nothing more.
type absentCache struct {
	ttl       time.Duration
	perShard  int
	keyPrefix string // "<prefix>:v1:sess:{": invalidation pushes name the tag after it
	seed      maphash.Seed
	shards    [absentShards]absentShard
	epoch     atomic.Uint64
	stripes   [absentStripes]atomic.Uint64
}

const (
	absentShards  = 16
	absentStripes = 1024
)

// absentKey is a reference's tag and part, compact and comparable (no string kept).
type absentKey [session.TagLen + session.PartLen]byte

type absentEntry struct {
	until         int64 // Unix nanos
	epoch, stripe uint64
}

// absentShard is a bounded map with its keys in insertion order (a ring): when it is full the
// oldest entry, which expires first, makes room.
type absentShard struct {
	mu   sync.Mutex
	m    map[absentKey]absentEntry
	ring []absentKey
	next int
}

// absentVersion is what a read records before it starts, for put.
type absentVersion struct{ epoch, stripe uint64 }

// newAbsentCache keeps up to entries references (at least one per shard) for ttl.
func newAbsentCache(keyPrefix string, ttl time.Duration, entries int) *absentCache {
	c := &absentCache{ttl: ttl, perShard: max(1, entries/absentShards), keyPrefix: keyPrefix, seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[absentKey]absentEntry)
	}
	return c
}

// keyOf is ref's key; false for a reference of another shape (never cached).
func keyOf(ref session.Ref) (k absentKey, ok bool) {
	if len(ref.Tag) != session.TagLen || len(ref.Part) != session.PartLen {
		return k, false
	}
	copy(k[copy(k[:], ref.Tag):], ref.Part)
	return k, true
}

func (c *absentCache) shard(k *absentKey) *absentShard {
	return &c.shards[maphash.Bytes(c.seed, k[:])%absentShards]
}

func (c *absentCache) stripe(tag string) *atomic.Uint64 {
	return &c.stripes[maphash.String(c.seed, tag)%absentStripes]
}

// version is taken before the read whose miss put may store.
func (c *absentCache) version(ref session.Ref) absentVersion {
	return absentVersion{epoch: c.epoch.Load(), stripe: c.stripe(ref.Tag).Load()}
}

// absentLookup is what the absent cache knows of a reference.
type absentLookup int

const (
	absentNone   absentLookup = iota // nothing remembered (or it expired)
	absentKnown                      // Redis found no session within the TTL, nothing written since
	absentVoided                     // a miss remembered, but something was written for the user since
)

// lookup says whether Redis found no session for ref within the TTL before now and nothing
// since may have created one (absentKnown), or something may have (absentVoided).
func (c *absentCache) lookup(ref session.Ref, now time.Time) absentLookup {
	k, ok := keyOf(ref)
	if !ok {
		return absentNone
	}
	sh := c.shard(&k)
	sh.mu.Lock()
	e, ok := sh.m[k]
	sh.mu.Unlock()
	switch {
	case !ok || now.UnixNano() >= e.until:
		return absentNone
	case e.epoch == c.epoch.Load() && e.stripe == c.stripe(ref.Tag).Load():
		return absentKnown
	}
	return absentVoided
}

// put remembers that a read begun at version v found no session for ref.
func (c *absentCache) put(ref session.Ref, v absentVersion, now time.Time) {
	k, ok := keyOf(ref)
	if !ok || v != c.version(ref) {
		return // something was written for the user meanwhile
	}
	e := absentEntry{until: now.Add(c.ttl).UnixNano(), epoch: v.epoch, stripe: v.stripe}
	sh := c.shard(&k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[k]; ok {
		sh.m[k] = e
		return
	}
	if len(sh.ring) < c.perShard {
		sh.ring = append(sh.ring, k)
	} else {
		delete(sh.m, sh.ring[sh.next])
		sh.ring[sh.next] = k
		sh.next = (sh.next + 1) % c.perShard
	}
	sh.m[k] = e
}

// created voids every entry of the user with tag: a session was just created there. Safe on a
// nil cache.
func (c *absentCache) created(tag string) {
	if c != nil {
		c.stripe(tag).Add(1)
	}
}

// invalidate is rueidis' invalidation callback: a write to one of a user's session keys
// (the user's hash, or a session's) voids the user's entries; a flush voids all.
func (c *absentCache) invalidate(keys []string, all bool) {
	if all {
		c.epoch.Add(1)
		return
	}
	for _, key := range keys {
		if rest, ok := strings.CutPrefix(key, c.keyPrefix); ok {
			if tag, _, ok := strings.Cut(rest, "}"); ok && tag != "" {
				c.created(tag)
			}
		}
	}
}

// authorizeUnlessAbsent is authorizeRead answered from the absent cache when Redis has just
// found no session for ref; a miss it reads is remembered.
func (r *Sessions) authorizeUnlessAbsent(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error) {
	t := now
	if t.IsZero() {
		t = r.now()
	}
	fresh := false
	switch r.absent.lookup(ref, t) {
	case absentKnown:
		r.metrics.Event(ctx, sessObject, "missing_remembered")
		return nil, errAbsentSession
	case absentVoided:
		// Written since the miss (a create of this reference): read Redis itself,
		// never the client-side copy of the miss, which the write's invalidation push may not
		// have reached yet.
		fresh = true
	}
	v := r.absent.version(ref)
	var ac *session.AuthContext
	var err error
	if fresh {
		ac, err = r.authorizeFresh(ctx, ref, view, mac)
	} else {
		ac, err = r.authorizeRead(ctx, ref, view, mac, now)
	}
	if err != nil && errors.Is(err, apperr.NotFound) {
		r.absent.put(ref, v, t)
	}
	return ac, err
}

// errAbsentSession is the absent cache's answer: no session (apperr.NotFound).
var errAbsentSession = fmt.Errorf("session missing (remembered): %w", apperr.NotFound)
