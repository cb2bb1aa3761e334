package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// caller is the one preamble of the operations of a domain service: the authenticated caller,
// who must belong to a tenant. Every service is present (handlers.NewServer refuses to build
// without one), so there is no "not configured" answer.
func caller(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Tenant == "" {
		return nil, apperr.New(apperr.Unauthenticated, "The credentials carry no tenant.")
	}
	return p, nil
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
