package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The end user's operations on their own session and devices: the caller is a session
// principal, and every operation but logout refuses a login that waits for its MFA verify.

const loginPendingDetail = "The login is not complete: verify its MFA code first (POST /v1/sessions/{sessionId}/mfa/verify)."

// LoggedIn refuses (401 mfa-required) a session principal whose login waits for its MFA
// verify; any other principal passes. It reads what Authenticate put on the principal (no
// Redis call): forward auth checks it on every request.
func LoggedIn(p *auth.Principal) error {
	if p == nil || p.Kind != auth.KindSession {
		return nil
	}
	if p.LoginPending {
		return apperr.New(apperr.MFARequired, loginPendingDetail)
	}
	return nil
}

// ownRef returns the caller's session reference; p must be a session principal.
func ownRef(p *auth.Principal) (session.Ref, error) {
	if p == nil || p.Kind != auth.KindSession {
		return session.Ref{}, apperr.New(apperr.Unauthenticated, "This operation needs a session token.")
	}
	r, ok := session.ParseID(p.SessionID)
	if !ok {
		return session.Ref{}, invalidSession()
	}
	return r, nil
}

// own returns the caller's session reference and refuses a session whose login waits for MFA
// (401 mfa-required): every end-user operation but logout goes through it. It judges what
// Authenticate read (no second read).
func (s *Service) own(p *auth.Principal) (session.Ref, error) {
	r, err := ownRef(p)
	if err != nil {
		return r, err
	}
	if p.LoginPending {
		return r, apperr.New(apperr.MFARequired, loginPendingDetail)
	}
	return r, nil
}

// Current is the caller's own session ("who am I"): the view AuthenticateView read (no second
// read), else read now.
func (s *Service) Current(ctx context.Context, p *auth.Principal) (*session.Session, error) {
	r, err := s.own(p)
	if err != nil {
		return nil, err
	}
	v := p.Session
	if v == nil || v.Ref != r || v.TenantID != p.Tenant {
		v, err = s.store.Get(ctx, r, p.Tenant)
		if errors.Is(err, apperr.NotFound) || errors.Is(err, apperr.ErrCorrupt) {
			return nil, apperr.Wrap(apperr.InvalidCredentials, invalidSessionDetail, err)
		}
		if err != nil {
			return nil, err
		}
		if v.LoginPending {
			return nil, apperr.New(apperr.MFARequired, loginPendingDetail)
		}
	}
	return v, nil
}

// Logout revokes the caller's own session; a session whose login waits for MFA may log out.
func (s *Service) Logout(ctx context.Context, p *auth.Principal) error {
	r, err := ownRef(p)
	if err != nil {
		return err
	}
	s.wrote(r)
	deleted, err := s.store.Revoke(ctx, r, p.Tenant)
	s.auditEnded(ctx, p.Tenant, r, deleted)
	return err
}

// Devices is a page of the caller's live sessions on every device, newest first (list).
func (s *Service) Devices(ctx context.Context, p *auth.Principal, cursor string, limit int) (page.Page[session.Session], error) {
	r, err := s.own(p)
	if err != nil {
		return page.Page[session.Session]{}, err
	}
	return s.list(ctx, r.Tag, p.Tenant, cursor, limit)
}

// RevokeDevice signs out one of the caller's sessions; another user's id answers NotFound.
func (s *Service) RevokeDevice(ctx context.Context, p *auth.Principal, id string) error {
	mine, err := s.own(p)
	if err != nil {
		return err
	}
	r, err := ref(id)
	if err != nil {
		return err
	}
	if r.Tag != mine.Tag {
		return fmt.Errorf("session %s: %w", id, apperr.NotFound)
	}
	s.wrote(r)
	deleted, err := s.store.Revoke(ctx, r, p.Tenant)
	s.auditEnded(ctx, p.Tenant, r, deleted)
	return err
}

// RevokeOtherDevices signs out every session of the caller but the current one ("sign out
// everywhere else") in one atomic, cluster-safe step — the admin revoke-all with the caller's
// session excepted — and returns how many it revoked.
func (s *Service) RevokeOtherDevices(ctx context.Context, p *auth.Principal) (int, error) {
	mine, err := s.own(p)
	if err != nil {
		return 0, err
	}
	s.wrote(session.Ref{Tag: mine.Tag})
	n, err := s.store.RevokeAll(ctx, mine.Tag, mine.Part)
	s.auditRevokedAll(ctx, p.Tenant, mine.Tag, n)
	return n, err
}
