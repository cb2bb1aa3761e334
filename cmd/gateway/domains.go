package main

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/tokens"
	"github.com/hashgate/hashgate/internal/wiring"
)

// wireDomains plugs the domain services (tokens, sessions, quotes, cases) into a.deps and
// registers their background loops. The building itself is internal/wiring, shared with the
// fault suites.
func wireDomains(_ context.Context, a *app) error {
	d, err := wiring.Build(a.cfg, a.store, a.auth, a.hasher, a.tel, a.log)
	if err != nil {
		return err
	}
	d.Into(&a.deps)
	a.mint = func(ctx context.Context, in mintInput) (string, time.Time, error) {
		out, err := d.Tokens.Mint(ctx, tokens.MintRequest{Tenant: in.Tenant, Subject: in.Subject, Scopes: in.Scopes,
			TTL: in.TTL, TokenType: in.TokenType, Description: in.Description})
		return out.Token, out.ExpiresAt, err
	}
	a.background = append(a.background, d.Sweeper.Run)
	return nil
}
