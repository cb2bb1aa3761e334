package store

import (
	"sync"

	"github.com/redis/rueidis"
)

// Invalidations hands Redis's client-tracking invalidation pushes (which rueidis receives for
// its client-side cache) to whatever keeps its own copies of tracked reads: the session hot
// path keeps the parsed form of a cached session and must drop it exactly when rueidis drops
// the raw one. A nil key list means "everything" (a FLUSHALL, or a lost connection, after
// which rueidis starts its cache afresh).
type Invalidations struct {
	mu   sync.RWMutex
	subs []func(keys []string, all bool)
}

// Subscribe registers fn; it runs on rueidis' reading goroutine, so it must be quick.
func (h *Invalidations) Subscribe(fn func(keys []string, all bool)) {
	h.mu.Lock()
	h.subs = append(h.subs, fn)
	h.mu.Unlock()
}

func (h *Invalidations) notify(msgs []rueidis.RedisMessage) {
	h.mu.RLock()
	subs := h.subs
	h.mu.RUnlock()
	if len(subs) == 0 {
		return
	}
	var keys []string
	all := msgs == nil
	for _, m := range msgs {
		if k, err := m.ToString(); err == nil {
			keys = append(keys, k)
		} else {
			all = true // a push we cannot read: drop everything rather than keep a stale copy
		}
	}
	for _, fn := range subs {
		fn(keys, all)
	}
}
