package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/tokens"
)

// mintCommand implements `gateway token mint`: it issues a token against the configured Redis
// (so its revocation metadata exists) and prints only the token.
func mintCommand(ctx context.Context, args []string, env environ, stdout io.Writer) error {
	fs := newFlagSet("token mint", "mint an API token against the configured Redis and print it (the gateway's keys and REDIS_URL, e.g. from the env file)")
	envFile := envFileFlag(fs)
	tenant := fs.String("tenant", "", "tenant id (required)")
	scope := fs.String("scope", "", "space-separated scopes (required), e.g. \"sessions:read sessions:write\"; tokens:admin is always added (a root token reaches every token of its tenant)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime (1m..GATEWAY_TOKEN_MAX_TTL)")
	subject := fs.String("subject", "cli", "subject (sub claim)")
	typ := fs.String("type", "service", "token type: service or user")
	desc := fs.String("description", "minted with gateway token mint", "description")
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return err
	}
	if *tenant == "" || strings.TrimSpace(*scope) == "" {
		return usageError{"token mint: --tenant and --scope are required\n" + flagUsage(fs)}
	}
	e, err := loadEnv(env, *envFile)
	if err != nil {
		return err
	}
	cfg, err := config.LoadEnv(e)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if cfg.Embedded() {
		return errors.New("token mint needs REDIS_URL, GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY shared with the gateway: " +
			"give the gateway's env file (--env-file, GATEWAY_ENV_FILE, or `gateway keygen --dir ~/.local/state/hashgate --redis-url URL` once); " +
			"in embedded mode use the bootstrap token the gateway prints")
	}
	if *ttl > cfg.TokenMaxTTL || *ttl < time.Minute {
		return usageError{fmt.Sprintf("token mint: --ttl must be within 1m..%s", cfg.TokenMaxTTL)}
	}
	cfg.RedisStartTimeout = 0 // a command fails at once: its caller sees why and retries
	a, err := build(ctx, cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	defer a.store.Close()
	// A CLI token is a root token: it holds tokens:admin (see auth.ScopeTokensAdmin).
	scopes := strings.Fields(*scope)
	if !slices.Contains(scopes, auth.ScopeTokensAdmin) {
		scopes = append(scopes, auth.ScopeTokensAdmin)
	}
	out, err := a.Tokens.Mint(ctx, tokens.MintRequest{Tenant: *tenant, Subject: *subject, Scopes: scopes, TTL: *ttl, TokenType: *typ, Description: *desc})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out.Token)
	return err
}
