package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/tokens"
)

// bootstrapSubject is the subject of the bootstrap admin token.
const bootstrapSubject = "bootstrap-admin"

// bootstrapScopes are the bootstrap admin token's scopes: a kept token must hold them all.
func bootstrapScopes() []string { return auth.KnownScopes() }

// bootstrapToken provides the bootstrap admin token of the bootstrap tenant (every scope). With
// GATEWAY_BOOTSTRAP_TOKEN_FILE set, the file's token is kept while it is live (signature,
// tenant, metadata, not revoked, not about to expire), so restarts do not pile up admin tokens;
// otherwise the old one is revoked and a new one minted and written (0600). In embedded mode the
// token is printed to stdout so a newcomer can curl at once. It never goes to the log.
func bootstrapToken(ctx context.Context, a *gateway, stdout io.Writer, addr string) error {
	f := a.cfg.BootstrapTokenFile
	if f == "" && !a.cfg.Embedded() {
		return nil
	}
	if repo := checkoutOf(f); repo != "" {
		a.log.Warn("the bootstrap token file is inside a checkout: keep it outside, e.g. in ~/.local/state/hashgate (README)", "file", f, "checkout", repo)
	}
	tok, exp, err := "", time.Time{}, error(nil)
	if f != "" {
		tok, exp, err = a.liveBootstrapToken(ctx, f)
		if err != nil {
			return fmt.Errorf("bootstrap token: %w", err)
		}
	}
	if tok != "" {
		a.log.Info("bootstrap admin token kept", "file", f, "tenant", a.cfg.BootstrapTenant, "expires_at", exp)
	} else {
		out, err := a.Tokens.Mint(ctx, tokens.MintRequest{
			Tenant: a.cfg.BootstrapTenant, Subject: bootstrapSubject, TokenType: tokens.TypeService,
			Scopes: bootstrapScopes(), TTL: a.cfg.BootstrapTokenTTL, Description: "bootstrap admin token",
		})
		if err != nil {
			return fmt.Errorf("bootstrap token: %w", err)
		}
		tok, exp = out.Token, out.ExpiresAt
		if f != "" {
			if err := writeSecretFile(f, tok); err != nil {
				return fmt.Errorf("bootstrap token file: %w", err)
			}
			a.log.Info("bootstrap admin token written", "file", f, "tenant", a.cfg.BootstrapTenant, "expires_at", exp)
		}
	}
	if a.cfg.Embedded() {
		url := "http://" + displayAddr(addr)
		fmt.Fprintf(stdout, `
  hashgate is running on an EMBEDDED in-process store (no REDIS_URL): state is lost on exit.
  Set REDIS_URL to use a real Redis. Listening on %s (%s).

  Bootstrap admin token (tenant %q, every scope, expires %s):

    export HG_TOKEN=%s

  API reference (try it in the browser; Authorize with the token): %s/docs

  Try:
    curl -s %s/readyz
    curl -s -H "Authorization: Bearer $HG_TOKEN" %s/v1/tokens

`, url, reach(addr), a.cfg.BootstrapTenant, exp.UTC().Format(time.RFC3339), tok, url, url, url)
	}
	return nil
}

// liveBootstrapToken is the token in file f when it can still serve: it verifies with the
// current keys, belongs to the bootstrap tenant and subject, its metadata says live, and more
// than a quarter of the bootstrap lifetime (at most an hour) is left. A token that verifies but
// cannot serve is revoked (it revokes itself), so that replacing it leaves one admin token.
// A missing or unreadable token is "" with no error.
func (a *gateway) liveBootstrapToken(ctx context.Context, f string) (string, time.Time, error) {
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	tok := strings.TrimSpace(string(b))
	claims, err := a.Auth.Verify(tok)
	if err != nil { // other keys, expired or garbage: nothing to reuse or revoke
		return "", time.Time{}, nil
	}
	margin := min(a.cfg.BootstrapTokenTTL/4, time.Hour)
	usable := claims.Tenant == a.cfg.BootstrapTenant && claims.Subject == bootstrapSubject &&
		claims.ExpiresAt != nil && time.Until(claims.ExpiresAt.Time) > margin &&
		!slices.ContainsFunc(bootstrapScopes(), func(s string) bool { return !claims.HasScope(s) })
	if usable {
		err := a.Tokens.Check(ctx, claims)
		if err == nil {
			return tok, claims.ExpiresAt.Time, nil
		}
		if !errors.Is(err, apperr.InvalidCredentials) {
			return "", time.Time{}, err
		}
	}
	if _, err := a.Tokens.Revoke(ctx, auth.PrincipalFromClaims(claims), claims.ID, "replaced at start"); err != nil {
		return "", time.Time{}, fmt.Errorf("revoke the previous token: %w", err)
	}
	return "", time.Time{}, nil
}

// writeSecretFile writes s to f (mode 0600) through a temporary file and a rename, creating f's
// folder (0700) when missing.
func writeSecretFile(f, s string) error {
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".bootstrap-token-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(s + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f)
}

// checkoutOf is the working tree holding file f (the nearest folder above it with a .git
// entry), or "" when there is none.
func checkoutOf(f string) string {
	if f == "" {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(f))
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
