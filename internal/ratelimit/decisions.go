package ratelimit

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// NewDecisionCounter is the instrument counting rate-limit decisions by policy and outcome
// (allowed, limited); the MFA verification path records into the same one.
func NewDecisionCounter(m metric.Meter) (metric.Int64Counter, error) {
	return m.Int64Counter("hashgate_ratelimit_decisions", metric.WithDescription("Rate-limit decisions by policy and outcome."))
}

// Record counts d on c (nil-safe).
func Record(ctx context.Context, c metric.Int64Counter, d Decision) {
	if c == nil {
		return
	}
	outcome := "allowed"
	if !d.Allowed {
		outcome = "limited"
	}
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("policy", d.Policy.Name), attribute.String("outcome", outcome)))
}
