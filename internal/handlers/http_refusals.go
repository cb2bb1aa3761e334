package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/ratelimit"
)

// Refused requests become events, aggregated per caller, limit and window (events.Refusals):
// counted in memory here, written in the background, so a refusal costs no Redis round trip.

// refusalSubject is the keyed id of the caller a refusal is about: its session id or token
// id, never its credential.
func refusalSubject(p *auth.Principal) string {
	if p.Kind == auth.KindSession {
		return p.SessionID
	}
	return p.TokenID
}

// refusedRate records a request the rate limits refused: one audit line (aggregated) and one
// count for each policy that refused it.
func (s *Server) refusedRate(c echo.Context, p *auth.Principal, ds []ratelimit.Decision) {
	s.auditFailure(c, string(events.RateLimitRefused), p)
	if s.Refusals == nil {
		return
	}
	ctx := c.Request().Context()
	_, trace := events.OriginFrom(ctx)
	for _, d := range ds {
		if !d.Allowed {
			s.Refusals.Record(ctx, events.Refusal{Type: events.RateLimitRefused, Tenant: p.Tenant, Subject: refusalSubject(p),
				Actor: actorOf(p), Name: d.Policy.Name, Limit: d.Policy.Limit, PolicyWindow: d.Policy.Window,
				RequestID: requestID(c), TraceID: trace})
		}
	}
}

// refusedQuota records a create refused over a tenant quota (e names the quota and its limit).
func (s *Server) refusedQuota(c echo.Context, e *apperr.Error) {
	ctx := c.Request().Context()
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return
	}
	s.auditFailure(c, string(events.QuotaRefused), p)
	name, _ := e.Extra["quota"].(string)
	limit, _ := e.Extra["limit"].(int)
	if s.Refusals == nil || name == "" {
		return
	}
	_, trace := events.OriginFrom(ctx)
	s.Refusals.Record(ctx, events.Refusal{Type: events.QuotaRefused, Tenant: p.Tenant, Subject: refusalSubject(p),
		Actor: actorOf(p), Name: name, Limit: limit, RequestID: requestID(c), TraceID: trace})
}
