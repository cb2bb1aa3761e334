package handlers

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// SessionService is what the sessions, session and forward-auth operations call
// (implemented by *sessions.Service).
type SessionService interface {
	Create(ctx context.Context, tenant string, in sessions.CreateInput) (*sessions.Issued, error)
	Get(ctx context.Context, tenant, id string) (*session.Session, error)
	Revoke(ctx context.Context, tenant, id string) error
	Rotate(ctx context.Context, tenant, id string) (*sessions.Issued, error)
	StartChallenge(ctx context.Context, tenant, id string) (*sessions.Challenge, error)
	Verify(ctx context.Context, tenant, id, challengeID, code string) (*sessions.Issued, error)
	ListUser(ctx context.Context, tenant, userID, cursor string, limit int) (page.Page[session.Session], error)
	RevokeUser(ctx context.Context, tenant, userID, except string) (int, error)
	SetGroups(ctx context.Context, tenant, id string, groups []string) (*session.Session, error)
	Current(ctx context.Context, p *auth.Principal) (*session.Session, error)
	Logout(ctx context.Context, p *auth.Principal) error
	Devices(ctx context.Context, p *auth.Principal, cursor string, limit int) (page.Page[session.Session], error)
	RevokeDevice(ctx context.Context, p *auth.Principal, id string) error
	RevokeOtherDevices(ctx context.Context, p *auth.Principal) (int, error)
}

var _ SessionService = (*sessions.Service)(nil)

// CreateSession starts a session for a user who has just logged in; the token is shown once.
func (s *Server) CreateSession(ctx context.Context, request CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	b := request.Body
	if b == nil {
		return nil, apperr.New(apperr.Validation, "A JSON body is required.")
	}
	in := sessions.CreateInput{UserID: b.UserId, AuthLevel: string(b.AuthLevel), MFARequired: deref(b.MfaRequired),
		IdleTimeout: sessSeconds(b.IdleTimeoutSeconds), AbsoluteTimeout: sessSeconds(b.AbsoluteTimeoutSeconds), Groups: deref(b.Groups)}
	if d := b.Device; d != nil {
		in.DeviceLabel, in.UserAgent, in.IP = deref(d.Label), deref(d.UserAgent), deref(d.Ip)
	}
	is, err := s.Sessions.Create(ctx, caller(ctx).Tenant, in)
	if err != nil {
		return nil, err
	}
	return CreateSession201JSONResponse{Body: sessionToken(is), Headers: CreateSession201ResponseHeaders{CacheControl: &noStore}}, nil
}

// GetSession is the full view of a session of the caller's tenant.
func (s *Server) GetSession(ctx context.Context, request GetSessionRequestObject) (GetSessionResponseObject, error) {
	v, err := s.Sessions.Get(ctx, caller(ctx).Tenant, request.SessionId)
	if err != nil {
		return nil, err
	}
	return GetSession200JSONResponse{Body: sessionView(v, false)}, nil
}

// DeleteSession revokes a session (idempotent: 204 whether or not it was live).
func (s *Server) DeleteSession(ctx context.Context, request DeleteSessionRequestObject) (DeleteSessionResponseObject, error) {
	return DeleteSession204Response{}, s.Sessions.Revoke(ctx, caller(ctx).Tenant, request.SessionId)
}

// SetSessionGroups replaces a session's groups; every replica's forward auth sees them at once.
func (s *Server) SetSessionGroups(ctx context.Context, request SetSessionGroupsRequestObject) (SetSessionGroupsResponseObject, error) {
	if request.Body == nil {
		return nil, apperr.New(apperr.Validation, "A JSON body is required.")
	}
	v, err := s.Sessions.SetGroups(ctx, caller(ctx).Tenant, request.SessionId, request.Body.Groups)
	if err != nil {
		return nil, err
	}
	return SetSessionGroups200JSONResponse{Body: sessionView(v, false)}, nil
}

// RotateSession issues a new token; the old one stops working at once.
func (s *Server) RotateSession(ctx context.Context, request RotateSessionRequestObject) (RotateSessionResponseObject, error) {
	is, err := s.Sessions.Rotate(ctx, caller(ctx).Tenant, request.SessionId)
	if err != nil {
		return nil, err
	}
	return RotateSession200JSONResponse{Body: sessionToken(is), Headers: RotateSession200ResponseHeaders{CacheControl: &noStore}}, nil
}

// CreateMfaChallenge starts a step-up; the caller delivers the code out of band.
func (s *Server) CreateMfaChallenge(ctx context.Context, request CreateMfaChallengeRequestObject) (CreateMfaChallengeResponseObject, error) {
	c, err := s.Sessions.StartChallenge(ctx, caller(ctx).Tenant, request.SessionId)
	if err != nil {
		return nil, err
	}
	return CreateMfaChallenge201JSONResponse{Body: MfaChallenge{ChallengeId: c.ID, Code: c.Code, ExpiresAt: ts(c.ExpiresAt)},
		Headers: CreateMfaChallenge201ResponseHeaders{CacheControl: &noStore}}, nil
}

// VerifyMfa checks the code; on success the session steps up and its token rotates.
func (s *Server) VerifyMfa(ctx context.Context, request VerifyMfaRequestObject) (VerifyMfaResponseObject, error) {
	is, err := s.Sessions.Verify(ctx, caller(ctx).Tenant, request.SessionId, request.Body.ChallengeId, request.Body.Code)
	if err != nil {
		return nil, err
	}
	return VerifyMfa200JSONResponse{Body: MfaVerified{SessionId: is.Ref.ID(), Token: is.Token, Status: MfaVerifiedStatusMFAVERIFIED,
		AuthLevel: MfaVerifiedAuthLevelMFA, Groups: groupsOrNil(is.Groups), IdleExpiresAt: tsOrNil(is.IdleExpiresAt), AbsoluteExpiresAt: tsOrNil(is.AbsoluteExpiresAt)},
		Headers: VerifyMfa200ResponseHeaders{CacheControl: &noStore}}, nil
}

// ListUserSessions is the user's live sessions, newest first.
func (s *Server) ListUserSessions(ctx context.Context, request ListUserSessionsRequestObject) (ListUserSessionsResponseObject, error) {
	list, err := s.Sessions.ListUser(ctx, caller(ctx).Tenant, request.UserId, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	return ListUserSessions200JSONResponse{Body: sessionList(list, ""),
		Headers: ListUserSessions200ResponseHeaders{Link: nextLink(ctx, list.NextCursor)}}, nil
}

// RevokeUserSessions revokes every session of the user, optionally keeping one.
func (s *Server) RevokeUserSessions(ctx context.Context, request RevokeUserSessionsRequestObject) (RevokeUserSessionsResponseObject, error) {
	n, err := s.Sessions.RevokeUser(ctx, caller(ctx).Tenant, request.UserId, deref(request.Params.Except))
	if err != nil {
		return nil, err
	}
	return RevokeUserSessions200JSONResponse{Body: RevokedCount{Revoked: n}}, nil
}

func sessionToken(is *sessions.Issued) SessionToken {
	return SessionToken{SessionId: is.Ref.ID(), Token: is.Token, Status: SessionStatus(is.Status), AuthLevel: AuthLevel(is.AuthLevel),
		CreatedAt: ts(is.CreatedAt), IdleExpiresAt: ts(is.IdleExpiresAt), AbsoluteExpiresAt: ts(is.AbsoluteExpiresAt), Groups: groupsOrNil(is.Groups)}
}

// groupsOrNil is a session's groups as the answers carry them: left out when it has none.
func groupsOrNil(g []string) *SessionGroups {
	if len(g) == 0 {
		return nil
	}
	return &g
}

func sessionView(v *session.Session, current bool) Session {
	out := Session{SessionId: v.Ref.ID(), UserId: v.UserID, TenantId: v.TenantID, Status: SessionStatus(v.Status),
		AuthLevel: AuthLevel(v.AuthLevel), CreatedAt: ts(v.CreatedAt), LastSeenAt: ts(v.LastSeenAt), IdleExpiresAt: ts(v.IdleExpiresAt),
		AbsoluteExpiresAt: ts(v.AbsoluteExpiresAt), LastRotatedAt: tsOrNil(v.LastRotatedAt),
		MfaVerifiedAt: tsOrNil(v.MFAVerifiedAt), Groups: groupsOrNil(v.Groups)}
	failed := int(v.FailedMFAAttempts)
	out.FailedMfaAttempts = &failed
	if v.DeviceLabel != "" {
		out.Device = &SessionDevice{Label: v.DeviceLabel}
	}
	if current {
		out.Current = &current
	}
	return out
}

// sessionList renders sessions; the one with id current (if any) is marked.
func sessionList(list page.Page[session.Session], current string) SessionList {
	out := SessionList{Items: make([]Session, 0, len(list.Items)), NextCursor: stringOrNil(list.NextCursor)}
	for i := range list.Items {
		v := sessionView(&list.Items[i], false)
		if current != "" {
			mine := list.Items[i].Ref.ID() == current
			v.Current = &mine
		}
		out.Items = append(out.Items, v)
	}
	return out
}

func sessSeconds(n *int) time.Duration {
	if n == nil {
		return 0
	}
	return time.Duration(*n) * time.Second
}
