package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// With the configuration's tracking (broadcast by the prefixes StoreOptions names),
// a revocation on one gateway reaches another that has the session and the token cached: the
// prefixes cover every key read through the client-side cache. The cache TTLs are a minute, so
// only Redis's push can explain a refusal within seconds. Both tracking modes are checked.
func TestRevocationsReachEveryGatewayUnderEachTrackingMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"bcast", "default"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := testredis.Backends()[1]
			cfg := defaults(t)
			if cfg.RedisURL = b.URL; b.URL == "" {
				t.Skipf("%s is unset (run `make test` to provision real Redis)", b.Env)
			}
			cfg.RedisClientTracking = mode
			cfg.SessionCacheTTL, cfg.TokenCacheTTL = time.Minute, time.Minute
			a, h, err := app.FreshKeys(cfg)
			if err != nil {
				t.Fatal(err)
			}
			one, _ := gatewayWith(t, cfg, a, h)
			two, _ := gatewayWith(t, cfg, a, h)
			ctx := context.Background()

			is, err := one.Sessions.Create(ctx, "acme", sessions.CreateInput{UserID: "u1", AuthLevel: "BASIC"})
			if err != nil {
				t.Fatal(err)
			}
			minted, err := one.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{auth.ScopeTokensRead},
				TTL: time.Hour, TokenType: tokens.TypeService})
			if err != nil {
				t.Fatal(err)
			}
			claims, err := a.Verify(minted.Token)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 { // cached on the second gateway
				if _, err := two.Sessions.Authenticate(ctx, is.Token); err != nil {
					t.Fatal(err)
				}
				if err := two.Tokens.Check(ctx, claims); err != nil {
					t.Fatal(err)
				}
			}
			if hits, _ := two.Sessions.CacheStats(); hits == 0 {
				t.Fatal("the second gateway never answered the session from its cache")
			}
			if err := one.Sessions.Revoke(ctx, "acme", is.Ref.ID()); err != nil {
				t.Fatal(err)
			}
			admin := &auth.Principal{Kind: auth.KindBearer, Subject: "admin", Tenant: "acme", Scopes: []string{auth.ScopeTokensWrite, auth.ScopeTokensAdmin}}
			if _, err := one.Tokens.Revoke(ctx, admin, minted.TokenID, "test"); err != nil {
				t.Fatal(err)
			}
			refused := func(err error) bool { e, ok := apperr.As(err); return ok && e.Kind == apperr.InvalidCredentials }
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, serr := two.Sessions.Authenticate(ctx, is.Token)
				terr := two.Tokens.Check(ctx, claims)
				if refused(serr) && refused(terr) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 5 s (cache TTL 1m) the other gateway still answers session: %v, token: %v", serr, terr)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
