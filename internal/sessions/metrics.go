package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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
	authWrongVerifier
	authResults
)

var authResultNames = [authResults]string{"ok", "malformed", "unknown", "corrupt", "tag_mismatch", "wrong_verifier"}

// instruments are the service's metrics. Authentications are counted in atomics and observed
// at collection (as the repository counts reads): one is counted on every forward-auth
// request, and a synchronous counter's Add costs the hot path about a microsecond of attribute
// handling. The cache figures are the repository's atomics, read the same way.
type instruments struct {
	auths [authResults]atomic.Int64
	// limits counts MFA attempt-limit decisions (hashgate_ratelimit_decisions, policy "mfa").
	limits metric.Int64Counter
}

func newInstruments(m metric.Meter, cacheStats func() (hits, misses int64)) (*instruments, error) {
	x := &instruments{}
	var errs []error
	auths, err := m.Int64ObservableCounter("hashgate_session_authentications",
		metric.WithDescription("Session-token authentications by result (ok, malformed, unknown, corrupt, tag_mismatch)."))
	errs = append(errs, err)
	if err == nil {
		var opts [authResults]metric.ObserveOption
		for i, name := range authResultNames {
			opts[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", name)))
		}
		_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for i := range x.auths {
				if n := x.auths[i].Load(); n > 0 { // a result never seen has no series (as with a counter)
					o.ObserveInt64(auths, n, opts[i])
				}
			}
			return nil
		}, auths)
		errs = append(errs, err)
	}
	x.limits, err = ratelimit.NewDecisionCounter(m)
	errs = append(errs, err)
	errs = append(errs, telemetry.ObserveCacheStats(m, "hashgate_session_auth_cache", "Session authentication reads", cacheStats))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sessions: metrics: %w", err)
	}
	return x, nil
}

func (x *instruments) auth(_ context.Context, r authResult) {
	x.auths[r].Add(1)
}

// CacheStats returns how many authentications the client-side cache answered and how many
// read Redis since start (both 0 with the cache off).
func (s *Service) CacheStats() (hits, misses int64) { return s.store.CacheStats() }
