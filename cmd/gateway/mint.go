package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/tokens"
)

// mintCommand implements `gateway token mint`: it issues a token against the configured Redis
// (so its revocation metadata exists) and prints only the token.
func mintCommand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token mint", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tenant := fs.String("tenant", "", "tenant id (required)")
	scope := fs.String("scope", "", "space-separated scopes (required)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime")
	subject := fs.String("subject", "cli", "subject (sub claim)")
	typ := fs.String("type", "service", "token type: service or user")
	desc := fs.String("description", "minted with gateway token mint", "description")
	if err := fs.Parse(args); err != nil {
		return usageError{"token mint: " + err.Error()}
	}
	if *tenant == "" || strings.TrimSpace(*scope) == "" {
		return usageError{"token mint: --tenant and --scope are required"}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if cfg.Embedded() {
		return errors.New("token mint needs REDIS_URL, GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY shared with the gateway (in embedded mode use the bootstrap token the gateway prints)")
	}
	if *ttl > cfg.TokenMaxTTL || *ttl < time.Minute {
		return usageError{fmt.Sprintf("token mint: --ttl must be within 1m..%s", cfg.TokenMaxTTL)}
	}
	a, err := build(ctx, cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	defer a.store.Close()
	out, err := a.Tokens.Mint(ctx, tokens.MintRequest{Tenant: *tenant, Subject: *subject, Scopes: strings.Fields(*scope), TTL: *ttl, TokenType: *typ, Description: *desc})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, out.Token)
	return err
}
