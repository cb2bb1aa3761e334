// Package ratesync is the gateway's request-rate limiter: it decides every request from memory
// and sends its counts to Redis in the background (window_add.lua), so replicas share the
// limits. The policies, decisions and headers it works with are internal/ratelimit's, which
// holds no Redis code, so the services that count decisions do not depend on the Redis client.
package ratesync

import (
	"cmp"
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/store"
)

//go:embed scripts/window_add.lua
var windowAddBody string

// ScriptBodies returns the scripts the limiter runs, for store.LoadScripts at start.
func ScriptBodies() []string { return []string{windowAddBody} }

// windowAddSHA is the script's SHA-1, for EVALSHA (store.LoadScripts loads it at start).
var windowAddSHA = func() string { h := sha1.Sum([]byte(windowAddBody)); return hex.EncodeToString(h[:]) }()

// Limiter is the gateway's request-rate limiter. It decides every request from memory, with no
// Redis round trip: a counter admits while the last total Redis answered for its window (what
// every replica together admitted) plus what this replica admitted since stays under the limit.
// A background loop (Run) sends what each counter admitted to Redis (window_add.lua) every
// FlushInterval, or at once when a counter has admitted SyncShare of its limit unsent, many
// counters per round trip, and learns the new totals from the replies; the same flush adds the
// decisions made since to hashgate_ratelimit_decisions.
//
// With one replica the limit is exact. With n replicas a counter can overshoot by what the
// others admitted and had not yet sent: at most (n − 1) × (SyncShare × limit + what one replica
// admits in a flush's round trip). When Redis cannot be reached (a flush waits at most the
// Redis timeout) the counts stay in memory and are sent once it answers again: each replica keeps enforcing the limit on its own admissions
// (fail open to local enforcement), so a request is never refused or failed for Redis's sake.
//
// Windows are fixed and aligned on the server's clock: each reply carries the server's time, and
// the replica keeps the offset to its own clock, taken from quick flushes only (Flush).
type Limiter struct {
	client    rueidis.Client
	prefix    string
	hasher    *keyhash.Hasher
	o         Options
	decisions metric.Int64Counter
	untracked metric.Int64Counter

	mu       sync.RWMutex
	counters map[counterKey]*counter
	dirty    []*counter // counters with admissions not yet sent or decisions not yet counted (each listed once)
	dirtyMu  sync.Mutex

	flushMu sync.Mutex   // one flush at a time
	offset  atomic.Int64 // server clock − local clock, ms
	// clockRTT is the quickest flush (ms) the offset was taken from (Flush: clockSampleMaxRTT).
	clockRTT atomic.Int64
	kick     chan struct{}
	now      func() time.Time
}

// Options configure New. Zero values take the defaults.
type Options struct {
	// FlushInterval is how often admissions are sent (default 100ms).
	FlushInterval time.Duration
	// SyncShare: a counter is sent at once, without waiting for the interval, when it has
	// admitted this share of its limit unsent (default 0.02; at least one request).
	SyncShare float64
	// MaxCounters bounds the counters held in memory (default 100,000; about 200 B each).
	// When the table is full a new identifier is not counted (hashgate_ratelimit_untracked)
	// until idle counters are swept; its request is decided by its other counters.
	MaxCounters int
	Meter       metric.Meter
	Logger      *slog.Logger
}

type counterKey struct{ policy, id string }

// counter is one identifier's count under one policy. Its fields are guarded by mu.
type counter struct {
	mu     sync.Mutex
	p      ratelimit.Policy
	key    string
	window int64 // start (server ms) of the window the counts below belong to
	global int64 // the last total Redis answered for window (every replica's, this one's sent ones included)
	sent   int64 // admitted, sent, not yet answered
	unsent int64 // admitted, not yet sent
	dirty  bool  // listed in Limiter.dirty
	// allowedN and limitedN are its decisions not yet added to the decisions metric (Flush
	// adds them), so a request costs an increment under the lock Take holds, not a metric call.
	allowedN, limitedN int64
	// allowed and limited are the decision counter's attributes, built once.
	allowed, limited metric.AddOption
	kickAt           int64 // unsent at which a flush is asked for at once
}

// ErrBadOptions reports a missing dependency.
var ErrBadOptions = errors.New("ratesync: bad limiter options")

// New returns a limiter over s; counter keys start with prefix.
func New(s *store.Store, prefix string, h *keyhash.Hasher, o Options) (*Limiter, error) {
	if s == nil || s.Client == nil || h == nil {
		return nil, fmt.Errorf("%w: store and hasher are required", ErrBadOptions)
	}
	if prefix == "" || strings.ContainsAny(prefix, ":{} ") {
		return nil, fmt.Errorf("%w: prefix must be non-empty without ':', '{', '}' or spaces", ErrBadOptions)
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.SyncShare <= 0 || o.SyncShare > 1 {
		o.SyncShare = 0.02
	}
	if o.MaxCounters <= 0 {
		o.MaxCounters = 100_000
	}
	o.Meter = cmp.Or(o.Meter, noop.NewMeterProvider().Meter("ratelimit"))
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	d, err := ratelimit.NewDecisionCounter(o.Meter)
	if err != nil {
		return nil, err
	}
	u, err := o.Meter.Int64Counter("hashgate_ratelimit_untracked",
		metric.WithDescription("Requests not counted under a policy because the counter table was full (GATEWAY_RATE_LIMIT_MAX_COUNTERS)."))
	if err != nil {
		return nil, err
	}
	l := &Limiter{client: s.Client, prefix: prefix, hasher: h, o: o, decisions: d, untracked: u,
		counters: make(map[counterKey]*counter), kick: make(chan struct{}, 1), now: time.Now}
	l.clockRTT.Store(math.MaxInt64)
	return l, nil
}

// Take counts one request against every counter of reqs when each has room, and returns each
// counter's decision (in reqs' order, skipping a counter the full table could not hold) and
// whether the request is allowed. A refused request is counted nowhere. It never calls Redis.
func (l *Limiter) Take(ctx context.Context, reqs ...ratelimit.Request) ([]ratelimit.Decision, bool) {
	srv := l.now().UnixMilli() + l.offset.Load()
	cs := make([]*counter, 0, len(reqs))
	for _, r := range reqs {
		if c := l.counter(ctx, r); c != nil && !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	// Locks in key order, so requests naming the same counters never wait on each other in a
	// cycle; all are held while deciding, so a limit is never passed by requests racing.
	locks := cs
	switch {
	case len(cs) == 2 && cs[0].key > cs[1].key:
		locks = []*counter{cs[1], cs[0]}
	case len(cs) > 2:
		locks = slices.SortedFunc(slices.Values(cs), func(a, b *counter) int { return strings.Compare(a.key, b.key) })
	}
	for _, c := range locks {
		c.mu.Lock()
	}
	out := make([]ratelimit.Decision, len(cs))
	allowed := true
	for i, c := range cs {
		w := c.p.Window.Milliseconds()
		if start := srv - srv%w; start > c.window {
			// A new window: what was counted belonged to the last one (a late answer for it
			// is ignored).
			c.window, c.global, c.sent, c.unsent = start, 0, 0, 0
		}
		n := c.global + c.sent + c.unsent
		out[i] = ratelimit.Decision{Policy: c.p, Allowed: n < int64(c.p.Limit), Count: int(min(n, int64(c.p.Limit))),
			Reset: time.Duration(c.window+w-srv) * time.Millisecond}
		allowed = allowed && out[i].Allowed
	}
	kick := false
	for i, c := range cs {
		if out[i].Allowed {
			c.allowedN++
		} else {
			c.limitedN++
		}
		if allowed {
			c.unsent++
			out[i].Count++
			// Near the limit every admission is sent at once: what other replicas admitted
			// meanwhile is learnt a round trip later, not an interval later.
			kick = kick || c.unsent >= c.kickAt || int64(c.p.Limit)-c.global <= 4*c.kickAt
		}
		l.markDirty(c) // its admission, or its decision for the metric
	}
	for _, c := range locks {
		c.mu.Unlock()
	}
	if kick {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return out, allowed
}

// markDirty lists c for the next flush (c.mu held): it has admissions to send or decisions to
// count.
func (l *Limiter) markDirty(c *counter) {
	if c.dirty {
		return
	}
	c.dirty = true
	l.dirtyMu.Lock()
	l.dirty = append(l.dirty, c)
	l.dirtyMu.Unlock()
}

// counter finds or makes the counter of r; nil when the table is full.
func (l *Limiter) counter(ctx context.Context, r ratelimit.Request) *counter {
	k := counterKey{r.Policy.Name, r.ID}
	l.mu.RLock()
	c := l.counters[k]
	l.mu.RUnlock()
	if c != nil {
		return c
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c = l.counters[k]; c != nil {
		return c
	}
	if len(l.counters) >= l.o.MaxCounters {
		l.untracked.Add(ctx, 1)
		return nil
	}
	tag := l.hasher.Tag("rl", 9, r.Policy.Name, r.ID)
	c = &counter{p: *r.Policy, key: ratelimit.Key(l.prefix, tag, r.Policy.Name),
		kickAt:  max(1, int64(float64(r.Policy.Limit)*l.o.SyncShare)),
		allowed: decisionAttrs(r.Policy.Name, true), limited: decisionAttrs(r.Policy.Name, false)}
	l.counters[k] = c
	return c
}
