package handlers

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/ratelimit"
)

// RequestLimiter decides from memory whether a request is within its rate limits and counts
// it (ratesync.Limiter): no Redis round trip on the request path.
type RequestLimiter interface {
	Take(ctx context.Context, reqs ...ratelimit.Request) ([]ratelimit.Decision, bool)
}

// RateLimits are the request-rate policies and the limiter that counts them. A nil policy is
// off; a nil Limiter turns every limit off.
type RateLimits struct {
	Limiter    RequestLimiter
	PerToken   *ratelimit.Policy // each API token, on every operation it calls
	PerTenant  *ratelimit.Policy // all the API tokens of a tenant together
	PerSession *ratelimit.Policy // each session, on the end user's operations
}

// limitRate counts an authenticated request against its principal's limits: an API token and
// its tenant, or a session. It runs for every operation with security except the two hot
// forward-auth routes (GET /v1/authorize, under any of its methods, and GET /v1/session),
// which the reverse proxy in front limits; the meta endpoints have no security. Over a limit
// it answers 429 with Retry-After; otherwise the answer, whatever it is, carries the
// RateLimit-Policy and RateLimit fields.
func (s *Server) limitRate(c echo.Context, p *auth.Principal) error {
	rl := &s.RateLimits
	if rl.Limiter == nil {
		return nil
	}
	var buf [2]ratelimit.Request
	reqs := buf[:0]
	switch p.Kind {
	case auth.KindBearer:
		if rl.PerToken != nil && p.TokenID != "" {
			reqs = append(reqs, ratelimit.Request{Policy: rl.PerToken, ID: p.TokenID})
		}
		if rl.PerTenant != nil && p.Tenant != "" {
			reqs = append(reqs, ratelimit.Request{Policy: rl.PerTenant, ID: p.Tenant})
		}
	case auth.KindSession:
		if rl.PerSession != nil && p.SessionID != "" {
			reqs = append(reqs, ratelimit.Request{Policy: rl.PerSession, ID: p.SessionID})
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	ds, ok := rl.Limiter.Take(c.Request().Context(), reqs...)
	if !ok {
		s.refusedRate(c, p, ds)
		return ratelimit.Refusal(ds)
	}
	policy, limit := ratelimit.HeaderValues(ds)
	res := c.Response()
	// Set just before the status line, after whatever the handler set: the generated typed
	// responses write every header the spec declares, empty ones included, and an operation
	// with a limit of its own (MFA attempts) lists it first.
	res.Before(func() {
		h := res.Header()
		h[policyHeader] = []string{joinList(h[policyHeader], policy)}
		h[limitHeader] = []string{joinList(h[limitHeader], limit)}
	})
	return nil
}

// The RateLimit fields' names in Go's canonical form (what Header.Set would make of
// "RateLimit-Policy" and "RateLimit"), so the request path indexes the header map without
// canonicalizing, an allocation each time.
const (
	policyHeader = "Ratelimit-Policy"
	limitHeader  = "Ratelimit"
)

// joinList appends b to the structured-field list the header holds (its first value).
func joinList(a []string, b string) string {
	if len(a) == 0 || a[0] == "" {
		return b
	}
	return a[0] + ", " + b
}
