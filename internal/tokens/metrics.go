package tokens

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hashgate/hashgate/internal/telemetry"
)

// instruments are the service's metrics. Cache hits and misses are plain atomics read by an
// observable callback, so the hot path pays no attribute allocation for them.
type instruments struct {
	issued          metric.Int64Counter
	revoked         metric.Int64Counter
	introspected    metric.Int64Counter
	revokedRejected metric.Int64Counter
	duration        metric.Float64Histogram
	hits, misses    atomic.Int64
	outcomeOpts     map[outcome][]metric.RecordOption
	activeOpts      [2][]metric.AddOption
}

func newInstruments(m metric.Meter) (*instruments, error) {
	x := &instruments{outcomeOpts: map[outcome][]metric.RecordOption{}}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	x.issued, err = m.Int64Counter("hashgate_tokens_issued", metric.WithDescription("API tokens issued, by token type."))
	add(err)
	x.revoked, err = m.Int64Counter("hashgate_tokens_revoked", metric.WithDescription("Revocation requests, by outcome (revoked, already_revoked, unknown)."))
	add(err)
	x.introspected, err = m.Int64Counter("hashgate_tokens_introspected", metric.WithDescription("Introspection answers, by active."))
	add(err)
	x.revokedRejected, err = m.Int64Counter("hashgate_tokens_revoked_rejected", metric.WithDescription("Requests refused because their token was revoked."))
	add(err)
	x.duration, err = m.Float64Histogram("hashgate_tokens_check_duration", metric.WithUnit("s"),
		metric.WithDescription("Per-request token check latency, by outcome."),
		metric.WithExplicitBucketBoundaries(0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25))
	add(err)
	add(telemetry.ObserveCacheStats(m, "hashgate_tokens_check_cache", "Token check reads",
		func() (int64, int64) { return x.hits.Load(), x.misses.Load() }))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tokens: metrics: %w", err)
	}
	for _, o := range []outcome{outcomeOK, outcomeUnknown, outcomeRevoked, outcomeExpired, outcomeMismatch, outcomeCorrupt, outcomeUnavailable, outcomeError} {
		x.outcomeOpts[o] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", string(o))))}
	}
	x.activeOpts = [2][]metric.AddOption{
		{metric.WithAttributeSet(attribute.NewSet(attribute.Bool("active", false)))},
		{metric.WithAttributeSet(attribute.NewSet(attribute.Bool("active", true)))},
	}
	return x, nil
}

func (x *instruments) cache(hit bool) {
	if hit {
		x.hits.Add(1)
	} else {
		x.misses.Add(1)
	}
}

func (x *instruments) checked(ctx context.Context, o outcome, d time.Duration) {
	x.duration.Record(ctx, d.Seconds(), x.outcomeOpts[o]...)
}

func (x *instruments) introspect(ctx context.Context, active bool) {
	i := 0
	if active {
		i = 1
	}
	x.introspected.Add(ctx, 1, x.activeOpts[i]...)
}

// CacheStats returns the check's client-side cache hits and misses since start.
func (s *Service) CacheStats() (hits, misses int64) { return s.m.hits.Load(), s.m.misses.Load() }
