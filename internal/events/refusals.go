package events

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashgate/hashgate/internal/flushloop"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Refusal is one refused request as Refusals counts it: a rate-limit refusal (one per policy
// that refused) or a create over a tenant quota.
type Refusal struct {
	Type   Type // RateLimitRefused or QuotaRefused
	Tenant string
	// Subject is the caller's keyed id (its token id or session id), never a credential.
	Subject string
	Actor   string
	// Name is the limit's: a rate-limit policy ("token", "tenant", "session") or a quota
	// ("quotes", "idempotency keys", ...); Limit its limit.
	Name  string
	Limit int
	// PolicyWindow is a rate limit's own window (zero for a quota).
	PolicyWindow       time.Duration
	RequestID, TraceID string
}

// RefusalWindow is one aggregate: a caller's refusals under one limit in one window, with the
// origin of the first of them this gateway saw.
type RefusalWindow struct {
	Refusal
	// StartMs and Length are the window's, on the Redis server's clock (ms).
	StartMs int64
	Length  time.Duration
	// DueMs is when the window's event is written (its end and a grace for the other
	// gateways' counts); ExpireMs when its shared total is forgotten.
	DueMs, ExpireMs int64
}

// Data is the event's data without the window and count (the store adds those).
func (w RefusalWindow) Data() map[string]any {
	if w.Type == QuotaRefused {
		return map[string]any{"quota": w.Name, "limit": w.Limit}
	}
	return map[string]any{"policy": w.Name, "limit": w.Limit, "policyWindowMs": w.PolicyWindow.Milliseconds()}
}

// RefusalOutcome is what one RefusalStore.Add did.
type RefusalOutcome int

const (
	// RefusalPending: the count is in the shared total; the event waits for DueMs.
	RefusalPending RefusalOutcome = iota
	// RefusalWritten: this call wrote the window's event (with every count added so far).
	RefusalWritten
	// RefusalAlready: the window's event was written before; the count added now is in none.
	RefusalAlready
)

// RefusalStore keeps each window's total where every gateway adds to it (Redis:
// internal/repo/refusalstore).
type RefusalStore interface {
	// Add adds n refusals (n ≥ 0) to w's shared total and, once the server's clock is past
	// w.DueMs and no gateway wrote the window's event yet, writes it to the tenant's stream
	// with the total, in the same step. It returns what it did and the server's time (ms).
	Add(ctx context.Context, w RefusalWindow, n int64) (RefusalOutcome, int64, error)
}

// RefusalOptions configure NewRefusals; zero values take the defaults.
type RefusalOptions struct {
	// Window is the aggregation window (GATEWAY_EVENTS_REFUSAL_WINDOW; default 1 min).
	Window time.Duration
	// Grace is how long after a window's end its event waits for the other gateways' counts
	// (default: two flush ticks and one second).
	Grace time.Duration
	// MaxPending bounds the windows counted in memory at once (default 10,000; about 300 B
	// each). A refusal of a new window beyond it is dropped (counted).
	MaxPending int
	Meter      metric.Meter
	Logger     *slog.Logger
}

// DefaultRefusalWindow is the default aggregation window of refusal events.
const DefaultRefusalWindow = time.Minute

// refusalKeep is how long a window's shared total outlives its due time: longer than any
// gateway keeps trying to add to it (refusalKeep/2), so a late count never writes a second event.
const refusalKeep = 5 * time.Minute

// Refusals aggregates refused requests into events: per tenant, subject (the caller's keyed
// id), limit and window, one event per window across every gateway, whose count is every
// gateway's refusals in it. Record only counts in memory: a refused request costs no Redis
// round trip. Run adds each gateway's counts to a shared total in Redis once the window ends
// and, after a grace for the other gateways, the first gateway to call again writes the event
// (RefusalStore.Add). Safe for concurrent use; a nil *Refusals records nothing.
type Refusals struct {
	store   RefusalStore
	o       RefusalOptions
	tick    time.Duration
	dropped metric.Int64Counter
	offset  atomic.Int64 // server clock − local clock, ms
	now     func() time.Time

	mu      sync.Mutex
	pending map[refusalKey]*refusalAgg
}

type refusalKey struct {
	typ                   Type
	tenant, subject, name string
	start                 int64
}

type refusalAgg struct {
	w      RefusalWindow
	unsent int64 // refused here, not yet added to the shared total
	added  bool  // some of this gateway's count is in the shared total: an Add follows at DueMs
}

// Reasons a refusal is not in any event (hashgate_events_refusals_dropped{reason}).
var (
	dropFull  = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "full")))
	dropStale = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "stale")))
	dropLate  = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", "late")))
)

// NewRefusals returns the aggregator over s.
func NewRefusals(s RefusalStore, o RefusalOptions) (*Refusals, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no refusal store", ErrConfig)
	}
	if o.Window <= 0 {
		o.Window = DefaultRefusalWindow
	}
	if o.Window < time.Second {
		return nil, fmt.Errorf("%w: refusal window under 1s", ErrConfig)
	}
	tick := min(max(o.Window/4, 100*time.Millisecond), time.Second)
	if o.Grace <= 0 {
		o.Grace = 2*tick + time.Second
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10000
	}
	o.Meter = cmp.Or(o.Meter, noop.NewMeterProvider().Meter("events"))
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	d, err := o.Meter.Int64Counter("hashgate_events_refusals_dropped",
		metric.WithDescription("Refused requests counted in no refusal event: full (too many windows pending), stale (Redis unreachable past the window's keep), late (counted after the window's event)."))
	if err != nil {
		return nil, err
	}
	return &Refusals{store: s, o: o, tick: tick, dropped: d, now: time.Now, pending: map[refusalKey]*refusalAgg{}}, nil
}

// Record counts one refusal in its window, in memory only.
func (r *Refusals) Record(ctx context.Context, f Refusal) {
	if r == nil || f.Tenant == "" || f.Subject == "" {
		return
	}
	w := r.o.Window.Milliseconds()
	srv := r.now().UnixMilli() + r.offset.Load()
	start := srv - srv%w
	k := refusalKey{f.Type, f.Tenant, f.Subject, f.Name, start}
	full := false
	r.mu.Lock()
	if a, ok := r.pending[k]; ok {
		a.unsent++
	} else if full = len(r.pending) >= r.o.MaxPending; !full {
		due := start + w + r.o.Grace.Milliseconds()
		r.pending[k] = &refusalAgg{unsent: 1, w: RefusalWindow{Refusal: f, StartMs: start, Length: r.o.Window,
			DueMs: due, ExpireMs: due + refusalKeep.Milliseconds()}}
	}
	r.mu.Unlock()
	if full {
		r.dropped.Add(ctx, 1, dropFull)
	}
}

type refusalSend struct {
	k refusalKey
	a *refusalAgg
	n int64
}

// Flush adds the counts of the windows that ended to their shared totals, and writes (or finds
// written) the events of those past their grace. final (shutdown) adds every count now,
// ended window or not: another gateway's later call writes the event. At the first failed
// call the round ends; its counts and the rest are kept for the next Flush, until the
// window's keep has half passed.
func (r *Refusals) Flush(ctx context.Context, final bool) error {
	if r == nil {
		return nil
	}
	srv := r.now().UnixMilli() + r.offset.Load()
	var sends []refusalSend
	var stale int64
	r.mu.Lock()
	for k, a := range r.pending {
		end := a.w.StartMs + a.w.Length.Milliseconds()
		switch {
		case srv > a.w.DueMs+refusalKeep.Milliseconds()/2:
			stale += a.unsent
			delete(r.pending, k)
		case a.unsent > 0 && (final || srv >= end), a.added && srv >= a.w.DueMs:
			sends = append(sends, refusalSend{k, a, a.unsent})
			a.unsent = 0
		}
	}
	r.mu.Unlock()
	if stale > 0 {
		r.dropped.Add(ctx, stale, dropStale)
	}
	for i, s := range sends {
		out, now, err := r.store.Add(ctx, s.a.w, s.n)
		received := r.now().UnixMilli()
		var late int64
		r.mu.Lock()
		switch {
		case err != nil:
			// Redis is not answering: keep this count and the rest for the next flush
			// rather than wait out a timeout for each.
			for _, rest := range sends[i:] {
				rest.a.unsent += rest.n
			}
			r.mu.Unlock()
			return err
		case out == RefusalPending:
			s.a.added = s.a.added || s.n > 0
		default: // written, or written before: the window is done here
			late = s.a.unsent
			if out == RefusalAlready {
				late += s.n
			}
			delete(r.pending, s.k)
		}
		r.mu.Unlock()
		r.offset.Store(now - received)
		if late > 0 {
			r.dropped.Add(ctx, late, dropLate)
		}
	}
	return nil
}

// Run flushes every tick until ctx ends, then adds what is left once.
func (r *Refusals) Run(ctx context.Context) {
	flushloop.Loop{Every: r.tick, Flush: r.Flush, Log: r.o.Logger,
		Failing:   "refusal events not written: counts kept for the next flush",
		Recovered: "refusal events written again"}.Run(ctx)
}

// Pending is how many windows are counted in memory.
func (r *Refusals) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}
