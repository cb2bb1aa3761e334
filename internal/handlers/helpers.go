package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/auth"
)

// caller is the authenticated caller of an operation with security requirements. The
// authentication middleware puts it on the request's context before the handler runs and
// refuses every request it cannot authenticate, so a handler always finds one; and every
// principal has a tenant (a JWT without one is refused, a session belongs to a tenant's user).
// Only an operation the spec leaves public (security: []) could reach its handler without a
// caller, and none of those calls this: that would be a wiring error, answered 500.
func caller(ctx context.Context) *auth.Principal {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		panic("handlers: an operation without security requirements asked for its caller")
	}
	return p
}

// noStore is the Cache-Control of every answer that carries a token or a code.
var noStore = "no-store"

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
