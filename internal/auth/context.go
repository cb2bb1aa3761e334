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
	// Act is a bearer token's actor chain: who minted it (nil for a root token and a session).
	Act *Actor
	// LoginPending is true for a session whose login waits for its MFA verify: it is not
	// logged in (every operation but logout and the verify answers 401 mfa-required).
	LoginPending bool
	// Groups are a session's groups (nil: none; tokens carry none).
	Groups []string
	// Session is the session's full view as the authenticator read it, for the operation that
	// answers with it ("who am I") without reading it again; nil for bearer principals and
	// when only the hot fields were read (every other operation).
	Session *session.Session
	// Derived is where the session's decoded copy this principal was answered from keeps
	// values derived from it (forward auth's assertion: Asserter.AssertKept); nil for bearer
	// principals and sessions read without a kept copy.
	Derived *session.Derived
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
		Act:     c.Act,
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
