package sessions

import (
	"context"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The audit log of session changes whose events are not written (GATEWAY_SESSION_EVENTS, all
// of them with session events off, all but the ends by default): this service logs each such
// change it made, once it is done (Config.Audit). The relay logs each written event as it
// copies it (internal/repo/eventstore), so every change has one line.

// audit logs typ about the session ref of tenant, unless its event is written.
func (s *Service) audit(ctx context.Context, typ events.Type, tenant string, ref session.Ref) {
	if !s.cfg.Events.Writes(typ) {
		s.cfg.Audit.Change(ctx, typ, tenant, ref.ID(), 1)
	}
}

// auditEnded logs the end of a session ref (deleted reports it was live): logged out when the
// caller is that session, revoked otherwise — as session_ended in the scripts.
func (s *Service) auditEnded(ctx context.Context, tenant string, ref session.Ref, deleted bool) {
	if !deleted {
		return
	}
	typ := events.SessionRevoked
	if o, _ := events.OriginFrom(ctx); o.Actor == events.SessionActor(ref.ID()) {
		typ = events.SessionLoggedOut
	}
	s.audit(ctx, typ, tenant, ref)
}

// auditRevokedAll logs a revoke-all of the user tag that ended n sessions: one line, subject
// the user's tag (a session event's data.userTag), count n.
func (s *Service) auditRevokedAll(ctx context.Context, tenant, tag string, n int) {
	if n > 0 && !s.cfg.Events.Writes(events.SessionRevoked) {
		s.cfg.Audit.Change(ctx, events.SessionRevoked, tenant, tag, n)
	}
}

// auditVerify logs an MFA verification: verified, or a wrong code and, when it used the
// window's last attempt (left 0), the lock.
func (s *Service) auditVerify(ctx context.Context, tenant string, ref session.Ref, outcome session.VerifyOutcome, left int) {
	switch outcome {
	case session.VerifyOK:
		s.audit(ctx, events.SessionMFAVerified, tenant, ref)
	case session.VerifyWrongCode:
		s.audit(ctx, events.SessionMFAFailed, tenant, ref)
		if left == 0 {
			s.audit(ctx, events.SessionMFALocked, tenant, ref)
		}
	}
}
