package main

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/sweeper"
	"github.com/hashgate/hashgate/internal/tokens"
)

// wireDomains plugs the domain services (tokens, sessions, quotes, cases) into a.deps and
// registers their background loops.
func wireDomains(_ context.Context, a *app) error {
	rm := repo.NewMetrics(a.tel.Meter("github.com/hashgate/hashgate/internal/repo"))

	tr, err := repo.NewTokens(a.store, repo.TokensOptions{Prefix: a.cfg.KeyPrefix, Hasher: a.hasher,
		SafetyWindow: a.cfg.TokenSafetyWindow, Metrics: rm, Logger: a.log})
	if err != nil {
		return err
	}
	tok, err := tokens.New(a.auth, tr, tokens.Options{MaxTTL: a.cfg.TokenMaxTTL, CacheTTL: a.cfg.TokenCacheTTL,
		Meter:  a.tel.Meter("github.com/hashgate/hashgate/internal/tokens"),
		Tracer: a.tel.Tracer("github.com/hashgate/hashgate/internal/tokens"), Logger: a.log})
	if err != nil {
		return err
	}
	a.deps.Tokens, a.deps.TokenCheck = tok, tok
	a.mint = func(ctx context.Context, in mintInput) (string, time.Time, error) {
		out, err := tok.Mint(ctx, tokens.MintRequest{Tenant: in.Tenant, Subject: in.Subject, Scopes: in.Scopes,
			TTL: in.TTL, TokenType: in.TokenType, Description: in.Description})
		return out.Token, out.ExpiresAt, err
	}

	sessRepo, err := repo.NewSessions(a.store, repo.Keys{Prefix: a.cfg.KeyPrefix}, repo.SessionOptions{
		RefreshFraction: a.cfg.SessionRefreshFraction, DefaultIdle: a.cfg.SessionIdleTimeout,
		MaxPerUser: a.cfg.SessionMaxPerUser, CacheTTL: a.cfg.SessionCacheTTL,
		MFA:     ratelimit.Policy{Name: repo.MFAPolicyName, Limit: a.cfg.MFAMaxAttempts, Window: a.cfg.MFAWindow},
		Metrics: rm, Logger: a.log,
	})
	if err != nil {
		return err
	}
	sess, err := sessions.New(sessRepo, a.hasher, sessions.Config{
		IdleTimeout: a.cfg.SessionIdleTimeout, AbsoluteTimeout: a.cfg.SessionAbsoluteTimeout,
		ChallengeTTL: a.cfg.MFAChallengeTTL, Logger: a.log,
		Meter: a.tel.Meter("github.com/hashgate/hashgate/internal/sessions"),
	})
	if err != nil {
		return err
	}
	a.deps.Sessions, a.deps.SessionAuth = sess, sess

	idem, err := repo.NewIdempotency(a.store, repo.IdempotencyOptions{Prefix: a.cfg.KeyPrefix, Hasher: a.hasher,
		TTL: a.cfg.IdempotencyTTL, Metrics: rm, Logger: a.log})
	if err != nil {
		return err
	}
	quotes, err := repo.NewQuotes(a.store, repo.QuoteOptions{Prefix: a.cfg.KeyPrefix, TTL: a.cfg.QuoteTTL,
		MaxItems: a.cfg.QuoteMaxItems, Metrics: rm, Logger: a.log})
	if err != nil {
		return err
	}
	cases, err := repo.NewCases(a.store, repo.CaseOptions{Prefix: a.cfg.KeyPrefix, Hasher: a.hasher,
		MaxEscalation: a.cfg.CaseMaxEscalation, OpenTTL: a.cfg.CaseOpenTTL, ResolvedTTL: a.cfg.CaseResolvedTTL,
		HistoryMax: a.cfg.CaseHistoryMax, Metrics: rm, Logger: a.log})
	if err != nil {
		return err
	}
	a.deps.Quotes = handlers.NewQuoteService(quotes, idem)
	a.deps.Cases = handlers.NewCaseService(cases, idem)
	sw, err := sweeper.New(cases, a.cfg.CaseSweepInterval, a.log, rm)
	if err != nil {
		return err
	}
	a.background = append(a.background, sw.Run)
	return nil
}
