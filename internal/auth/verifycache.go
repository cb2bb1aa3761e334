package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultVerifyCacheSize bounds the verified-token cache.
const DefaultVerifyCacheSize = 10000

// verifyCache remembers tokens whose signature and claims verified, keyed by the SHA-256 of
// the whole token, so a hot token pays for Ed25519 verification once instead of on every
// request. An entry is served only while its own exp (with the leeway) and nbf still hold
// and for at most verifyCacheTTL; it holds claims, never the token. Revocation is not this
// cache's concern: the Checker runs on every request.
type verifyCache struct {
	mu  sync.Mutex
	max int
	m   map[[32]byte]verifyEntry
}

type verifyEntry struct {
	claims Claims
	until  time.Time
}

const verifyCacheTTL = time.Minute

func newVerifyCache(max int) *verifyCache {
	if max <= 0 {
		return nil
	}
	return &verifyCache{max: max, m: make(map[[32]byte]verifyEntry, 1024)}
}

func (c *verifyCache) get(token string, now time.Time, leeway time.Duration) (*Claims, bool) {
	if c == nil {
		return nil, false
	}
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || now.After(e.until) {
		return nil, false
	}
	if e.claims.ExpiresAt != nil && now.After(e.claims.ExpiresAt.Add(leeway)) {
		return nil, false
	}
	if e.claims.NotBefore != nil && now.Add(leeway).Before(e.claims.NotBefore.Time) {
		return nil, false
	}
	cl := e.claims
	return &cl, true
}

func (c *verifyCache) put(token string, claims *Claims, now time.Time) {
	if c == nil {
		return
	}
	k := sha256.Sum256([]byte(token))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Evict expired entries; if none, drop an arbitrary one (map order is random).
		for key, e := range c.m {
			if now.After(e.until) {
				delete(c.m, key)
			}
		}
		for key := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, key)
		}
	}
	c.m[k] = verifyEntry{claims: *claims, until: now.Add(verifyCacheTTL)}
}
