package app

import (
	"log/slog"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/ratelimit/ratesync"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// buildRateLimits makes the request-rate policies from cfg and, when any is on, the limiter
// that counts them (its flush loop is one of the gateway's background loops).
func buildRateLimits(cfg config.Config, s *store.Store, h *keyhash.Hasher, tel *telemetry.Telemetry, log *slog.Logger) (handlers.RateLimits, *ratesync.Limiter, error) {
	var rl handlers.RateLimits
	policy := func(name, v string) (*ratelimit.Policy, error) {
		n, w, err := config.ParseRate(v)
		if err != nil || n == 0 {
			return nil, err
		}
		p := &ratelimit.Policy{Name: name, Limit: n, Window: w}
		return p, p.Validate()
	}
	var err error
	if rl.PerToken, err = policy("token", cfg.RateLimitPerToken); err != nil {
		return rl, nil, err
	}
	if rl.PerTenant, err = policy("tenant", cfg.RateLimitPerTenant); err != nil {
		return rl, nil, err
	}
	if rl.PerSession, err = policy("session", cfg.RateLimitPerSession); err != nil {
		return rl, nil, err
	}
	if rl.PerToken == nil && rl.PerTenant == nil && rl.PerSession == nil {
		return rl, nil, nil
	}
	l, err := ratesync.New(s, cfg.KeyPrefix, h, ratesync.Options{
		FlushInterval: cfg.RateLimitFlushInterval, SyncShare: cfg.RateLimitSyncShare, MaxCounters: cfg.RateLimitMaxCounters,
		Meter: tel.Meter("github.com/hashgate/hashgate/internal/ratelimit"), Logger: log})
	if err != nil {
		return rl, nil, err
	}
	rl.Limiter = l
	return rl, l, nil
}
