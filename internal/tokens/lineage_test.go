package tokens_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestMintedTokenDiesWithItsIssuer: A is a root (bootstrap/CLI path), B is minted with A's
// credentials, C with B's. B asks for a life past A's expiry and gets A's expiry (the answer
// says so). Revoking A revokes B and C in the same step: they introspect active:false and fail
// the check at once on the replica that revoked (read-your-writes) and, through Redis's
// invalidation push, on another replica whose cache holds them for far longer than the test
// waits. Each records the revocation with a reason naming A. A revoked token mints nothing.
func TestMintedTokenDiesWithItsIssuer(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		const cacheTTL = time.Minute
		one := e.service(t, s, nil, tokens.Options{CacheTTL: cacheTTL})
		two := e.service(t, peer(t, b, s, prefix), nil, tokens.Options{CacheTTL: cacheTTL})
		principal := func(tok string) *auth.Principal {
			c, err := e.auth.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			return auth.PrincipalFromClaims(c)
		}
		a, err := one.Mint(ctx, mintReq(auth.ScopeTokensWrite, auth.ScopeTokensRead))
		if err != nil {
			t.Fatal(err)
		}
		bTok, err := one.Issue(ctx, principal(a.Token), tokens.IssueRequest{Subject: "svc-b", Scopes: []string{auth.ScopeTokensWrite, auth.ScopeTokensRead},
			TTL: 3 * time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatalf("mint B with A: %v", err)
		}
		if !bTok.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("B expires at %v, past its issuer A (%v)", bTok.ExpiresAt, a.ExpiresAt)
		}
		if exp := principal(bTok.Token).ExpiresAt; !exp.Equal(a.ExpiresAt) {
			t.Fatalf("B's JWT exp %v, want A's %v", exp, a.ExpiresAt)
		}
		cTok, err := two.Issue(ctx, principal(bTok.Token), tokens.IssueRequest{Subject: "svc-c", Scopes: []string{auth.ScopeTokensRead},
			TTL: 10 * time.Minute, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatalf("mint C with B: %v", err)
		}
		if d := time.Until(cTok.ExpiresAt); d > 10*time.Minute || d < 9*time.Minute {
			t.Fatalf("C (well within B's life) expires in %v, want its 10 minutes", d)
		}
		// Both replicas have B and C cached as live.
		claims := map[string]*auth.Claims{}
		for name, tok := range map[string]string{"B": bTok.Token, "C": cTok.Token} {
			c, _ := e.auth.Verify(tok)
			claims[name] = c
			for i, svc := range []*tokens.Service{one, two} {
				if err := svc.Check(ctx, c); err != nil {
					t.Fatalf("replica %d: %s refused before the revocation: %v", i+1, name, err)
				}
			}
		}
		adminP := bearer(auth.KnownScopes()...)
		res, err := one.Revoke(ctx, adminP, a.TokenID, "leaked")
		if err != nil || res.String() != "revoked" {
			t.Fatalf("revoke A: %v %v", res, err)
		}
		for name, c := range claims {
			if err := one.Check(ctx, c); !errors.Is(err, apperr.InvalidCredentials) {
				t.Errorf("%s passes the check on the revoking replica: %v", name, err)
			}
			tok := map[string]string{"B": bTok.Token, "C": cTok.Token}[name]
			// The revoking replica answers at once; the other once Redis's invalidation push
			// has reached its cached copy (as the check below).
			for i, svc := range []*tokens.Service{one, two} {
				deadline := time.Now().Add(5 * time.Second)
				for {
					in, err := svc.Introspect(ctx, adminP, tok)
					if err == nil && !in.Active {
						break
					}
					if i == 0 || time.Now().After(deadline) {
						t.Errorf("replica %d: introspect %s = %+v, %v; want active:false", i+1, name, in, err)
						break
					}
					time.Sleep(time.Millisecond)
				}
			}
			got, err := one.Get(ctx, adminP, c.ID)
			if err != nil || !got.Revoked || got.RevokedAt.IsZero() || !strings.Contains(got.RevokedReason, a.TokenID) {
				t.Errorf("%s record after A's revocation: %+v, %v", name, got, err)
			}
			// The other replica learns it from the invalidation push, not the minute-long TTL.
			deadline := time.Now().Add(5 * time.Second)
			for {
				err := two.Check(ctx, c)
				if errors.Is(err, apperr.InvalidCredentials) {
					break
				}
				if err != nil {
					t.Fatalf("replica 2 check %s: %v", name, err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("replica 2 still accepts %s 5s after its ancestor's revocation (cache TTL %v)", name, cacheTTL)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		if got, _ := one.Get(ctx, adminP, a.TokenID); got.RevokedReason != "leaked" {
			t.Errorf("A's reason %q", got.RevokedReason)
		}
		// A revoked token mints nothing.
		if _, err := one.Issue(ctx, principal(bTok.Token), tokens.IssueRequest{Subject: "svc-d", Scopes: []string{auth.ScopeTokensRead},
			TTL: time.Hour, TokenType: tokens.TypeService}); !errors.Is(err, apperr.InvalidCredentials) {
			t.Fatalf("a revoked issuer minted: %v", err)
		}
		if res, err := one.Revoke(ctx, adminP, a.TokenID, "again"); err != nil || res.String() != "already_revoked" {
			t.Fatalf("second revoke: %v %v", res, err)
		}
	})
}
