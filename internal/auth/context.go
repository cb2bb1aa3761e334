package auth

import (
	"context"
	"slices"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Principal kinds.
const (
	KindBearer  = "bearer"
	KindSession = "session"
)

// Principal is the authenticated caller of a request.
type Principal struct {
	// Kind is KindBearer or KindSession.
	Kind      string
	Subject   string
	Tenant    string
	TokenID   string
	SessionID string
	AuthLevel string
	Scopes    []string
	ExpiresAt time.Time
	// Session is the session authenticator's view of the session, as it read it, for the
	// operations that answer with it (who am I) or judge it (a login waiting for MFA) without
	// reading it again; nil for bearer principals.
	Session *session.Session
}

// HasScope reports whether the principal holds scope s.
func (p *Principal) HasScope(s string) bool {
	return p != nil && s != "" && slices.Contains(p.Scopes, s)
}

// PrincipalFromClaims builds a bearer Principal from verified claims.
func PrincipalFromClaims(c *Claims) *Principal {
	p := &Principal{
		Kind:    KindBearer,
		Subject: c.Subject,
		Tenant:  c.Tenant,
		TokenID: c.ID,
		Scopes:  c.Scopes(),
	}
	if c.ExpiresAt != nil {
		p.ExpiresAt = c.ExpiresAt.Time
	}
	return p
}

type principalKey struct{}

// WithPrincipal returns a copy of ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal stored in ctx, if any.
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}
