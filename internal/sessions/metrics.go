package sessions

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// authResult is how one authentication ended, for metrics.
type authResult int

const (
	authOK authResult = iota
	authMalformed
	authUnknown
	authCorrupt
	authTagMismatch
	authResults
)

var authResultNames = [authResults]string{"ok", "malformed", "unknown", "corrupt", "tag_mismatch"}

// instruments are the service's metrics. Attribute sets are built once, so the hot path
// records without allocating; the cache figures are the repository's atomics, read by an
// observable callback (as the token check does).
type instruments struct {
	auths    metric.Int64Counter
	authOpts [authResults][]metric.AddOption
	// limits counts MFA attempt-limit decisions (hashgate_ratelimit_decisions, policy "mfa").
	limits metric.Int64Counter
}

func newInstruments(m metric.Meter, cacheStats func() (hits, misses int64)) (*instruments, error) {
	x := &instruments{}
	var errs []error
	var err error
	x.auths, err = m.Int64Counter("hashgate_session_authentications",
		metric.WithDescription("Session-token authentications by result (ok, malformed, unknown, corrupt, tag_mismatch)."))
	errs = append(errs, err)
	x.limits, err = ratelimit.NewDecisionCounter(m)
	errs = append(errs, err)
	errs = append(errs, telemetry.ObserveCacheStats(m, "hashgate_session_auth_cache", "Session authentication reads", cacheStats))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sessions: metrics: %w", err)
	}
	for i, name := range authResultNames {
		x.authOpts[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("result", name)))}
	}
	return x, nil
}

func (x *instruments) auth(ctx context.Context, r authResult) {
	x.auths.Add(ctx, 1, x.authOpts[r]...)
}

// CacheStats returns how many authentications the client-side cache answered and how many
// read Redis since start (both 0 with the cache off).
func (s *Service) CacheStats() (hits, misses int64) { return s.repo.CacheStats() }
