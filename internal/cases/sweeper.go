// The sweeper escalates overdue escalation cases by themselves. Every gateway replica runs
// one Sweeper; they need no coordination: each tick reads the tenants' due indexes and asks the
// store to escalate each overdue case, and the store's script re-checks — in one atomic step on
// the case's own keys — that the case is still OPEN, due by the Redis server's clock and never
// auto-escalated. However many sweepers race, each case is escalated once.
//
// Finding the due indexes on a cluster: a due index lives in its tenant's slot, so a sweeper
// cannot list them with one command. Instead tenants register their tag in one small global
// registry key when a case is created or reopened (see casestore.Store.SweepTenants). That is a
// single key, works unchanged on every topology, and is bounded and expiring.

package cases

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// DueStore is what the sweeper needs from the case store (*casestore.Store implements it).
// AutoEscalate answers AutoCorrupt with its error for a case it cannot read.
type DueStore interface {
	SweepTenants(ctx context.Context) ([]string, time.Time, error)
	DueCases(ctx context.Context, tenantTag string, now time.Time, limit int) ([]string, error)
	AutoEscalate(ctx context.Context, tenantTag, caseID string) (AutoOutcome, error)
	Undue(ctx context.Context, tenantTag string, caseIDs ...string) error
}

// Events counts domain events (*repo.Metrics implements it).
type Events interface {
	Event(ctx context.Context, object, event string)
}

type noEvents struct{}

func (noEvents) Event(context.Context, string, string) {}

// Sweeper defaults.
const (
	DefaultSweepInterval = 10 * time.Second
	// DefaultSweepBatch is how many due cases one tenant query returns.
	DefaultSweepBatch = 100
	// maxBatchesPerTenant bounds one tick's work per tenant; the rest waits for the next tick.
	maxBatchesPerTenant = 10
)

// Stats counts one sweep's outcomes.
type Stats struct {
	Tenants   int
	Escalated int
	Skipped   int // not open, already escalated once, at max level, or gone
	NotDue    int
	Errors    int
}

// Sweeper periodically escalates overdue OPEN cases.
type Sweeper struct {
	cases    DueStore
	interval time.Duration
	batch    int
	log      *slog.Logger
	m        Events
}

// NewSweeper returns a sweeper over cases running every interval (default 10 s); m may be nil.
func NewSweeper(cases DueStore, interval time.Duration, log *slog.Logger, m Events) (*Sweeper, error) {
	if cases == nil {
		return nil, fmt.Errorf("%w: no case store", ErrConfig)
	}
	if interval == 0 {
		interval = DefaultSweepInterval
	}
	if interval < 10*time.Millisecond {
		return nil, fmt.Errorf("%w: sweep interval %s is under 10ms", ErrConfig, interval)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = noEvents{}
	}
	return &Sweeper{cases: cases, interval: interval, batch: DefaultSweepBatch, log: log, m: m}, nil
}

// Run sweeps every interval (with ±10% jitter, so replicas spread out) until ctx is done.
func (s *Sweeper) Run(ctx context.Context) {
	s.log.InfoContext(ctx, "case sweeper started", "interval", s.interval.String())
	t := time.NewTimer(s.jittered())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.log.InfoContext(context.WithoutCancel(ctx), "case sweeper stopped")
			return
		case <-t.C:
		}
		st, err := s.SweepOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "case sweep failed", "err", err)
		case st.Escalated > 0 || st.Errors > 0:
			s.log.InfoContext(ctx, "case sweep", "tenants", st.Tenants, "escalated", st.Escalated, "skipped", st.Skipped, "errors", st.Errors)
		}
		t.Reset(s.jittered())
	}
}

func (s *Sweeper) jittered() time.Duration {
	j := time.Duration(rand.Int64N(int64(s.interval)/5+1)) - s.interval/10
	return s.interval + j
}

// SweepOnce runs one pass over every registered tenant.
func (s *Sweeper) SweepOnce(ctx context.Context) (Stats, error) {
	var st Stats
	tags, now, err := s.cases.SweepTenants(ctx)
	if err != nil {
		return st, fmt.Errorf("sweeper: tenants: %w", err)
	}
	st.Tenants = len(tags)
	for _, tag := range tags {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		s.sweepTenant(ctx, tag, now, &st)
	}
	return st, nil
}

// sweepTenant escalates the tenant's due cases batch by batch and drops from the index every
// case that needs no further look.
func (s *Sweeper) sweepTenant(ctx context.Context, tag string, now time.Time, st *Stats) {
	for range maxBatchesPerTenant {
		ids, err := s.cases.DueCases(ctx, tag, now, s.batch)
		if err != nil {
			st.Errors++
			s.log.WarnContext(ctx, "case sweep: due index", "err", err)
			return
		}
		var done []string
		for _, id := range ids {
			o, err := s.cases.AutoEscalate(ctx, tag, id)
			switch {
			case o == AutoCorrupt:
				st.Errors++
				done = append(done, id) // refused and logged by the repository; do not retry it forever
				continue
			case err != nil:
				st.Errors++
				s.log.WarnContext(ctx, "case sweep: auto-escalate", "err", err)
				continue
			}
			switch o {
			case AutoEscalated:
				st.Escalated++
				s.m.Event(ctx, "case", "sweeper_escalation")
			case AutoNotDue:
				st.NotDue++
			default:
				st.Skipped++
			}
			if o.Final() {
				done = append(done, id)
			}
		}
		if err := s.cases.Undue(ctx, tag, done...); err != nil {
			st.Errors++
			s.log.WarnContext(ctx, "case sweep: undue", "err", err)
			return
		}
		if len(ids) < s.batch || len(done) == 0 {
			return
		}
	}
}
