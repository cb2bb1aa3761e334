package app

import (
	"errors"
	"fmt"
	"time"

	"log/slog"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/casestore"
	"github.com/hashgate/hashgate/internal/repo/eventstore"
	"github.com/hashgate/hashgate/internal/repo/idemstore"
	"github.com/hashgate/hashgate/internal/repo/quotestore"
	"github.com/hashgate/hashgate/internal/repo/refusalstore"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/repo/tokenstore"
	"github.com/hashgate/hashgate/internal/repo/webhookstore"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/tokens"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// Domains are the built services.
type Domains struct {
	Tokens   *tokens.Service
	Sessions *sessions.Service
	Quotes   *quotes.Service
	Cases    *cases.Service
	Events   *events.Service
	// Relay moves session outboxes into the tenant streams; Gateway.Start runs its loop.
	Relay *eventstore.Relay
	// Audit is the audit log of security events (Gateway.Start runs its flush).
	Audit *events.Audit
	// Refusals aggregates rate-limit and quota refusals into events (Gateway.Start runs its flush).
	Refusals *events.Refusals
	// Sweeper escalates overdue cases; Gateway.Start runs its loop.
	Sweeper  *cases.Sweeper
	Webhooks *webhooks.Service
	// Deliverer delivers the tenants' events to their webhooks; Gateway.Start runs its loop.
	Deliverer *webhooks.Deliverer
}

// buildDomains wires every domain over s with cfg. tel may be nil (no telemetry).
func buildDomains(cfg config.Config, s *store.Store, a *auth.Authority, h *keyhash.Hasher, tel *telemetry.Telemetry, log *slog.Logger,
	now func() time.Time) (*Domains, error) {
	rm := repo.NewMetrics(tel.Meter("github.com/hashgate/hashgate/internal/repo"))
	var d Domains

	retention := events.Retention{MaxAge: cfg.EventsMaxAge, MaxLen: cfg.EventsMaxLen, Off: !cfg.Events}
	d.Audit = events.NewAudit(log, events.DefaultAuditWindow)
	eo := eventstore.Options{Prefix: cfg.KeyPrefix, Hasher: h, Retention: retention, Audit: d.Audit, Metrics: rm, Logger: log}
	if sessionLayout(cfg, s) != sessionstore.LayoutPerSession { // the session events wait in the user's session hash
		eo.SessionHash = func(tag string) string { return sessionstore.UserSessionsKey(repo.Keys{Prefix: cfg.KeyPrefix}, tag) }
	}
	es, err := eventstore.New(s, eo)
	if err != nil {
		return nil, err
	}
	if d.Events, err = events.New(es); err != nil {
		return nil, err
	}
	d.Relay = eventstore.NewRelay(es, cfg.EventsRelayInterval)
	rs, err := refusalstore.New(s, refusalstore.Options{Prefix: cfg.KeyPrefix, Hasher: h, Retention: retention, Metrics: rm})
	if err != nil {
		return nil, err
	}
	if d.Refusals, err = events.NewRefusals(rs, events.RefusalOptions{Window: cfg.EventsRefusalWindow,
		Meter: tel.Meter("github.com/hashgate/hashgate/internal/events"), Logger: log}); err != nil {
		return nil, err
	}

	tr, err := tokenstore.New(s, tokenstore.Options{Prefix: cfg.KeyPrefix, Hasher: h,
		SafetyWindow: cfg.TokenSafetyWindow, MaxPerTenant: cfg.TenantMaxTokens, Retention: retention, Audit: d.Audit, Metrics: rm, Logger: log})
	if err != nil {
		return nil, err
	}
	if d.Tokens, err = tokens.New(a, tr, tokens.Options{MaxTTL: cfg.TokenMaxTTL, CacheTTL: cfg.TokenCacheTTL, RecentWritesMax: cfg.RecentWritesMax,
		Meter:  tel.Meter("github.com/hashgate/hashgate/internal/tokens"),
		Tracer: tel.Tracer("github.com/hashgate/hashgate/internal/tokens"), Logger: log, Now: now}); err != nil {
		return nil, err
	}

	sessionEvents := sessionEventSet(cfg)
	sr, err := sessionstore.NewSessions(s, repo.Keys{Prefix: cfg.KeyPrefix}, sessionstore.SessionOptions{
		RefreshFraction: cfg.SessionRefreshFraction,
		MaxPerUser:      cfg.SessionMaxPerUser, CacheTTL: cfg.SessionCacheTTL, CacheEntries: entries(cfg.SessionCacheEntries),
		AbsentTTL: negativeOff(cfg.SessionNegativeCacheTTL), AbsentEntries: entries(cfg.SessionNegativeCacheEntries), LimitPolicy: sessionstore.SessionLimitPolicy(cfg.SessionLimitPolicy),
		Layout:  sessionLayout(cfg, s),
		MFA:     ratelimit.Policy{Name: sessionstore.MFAPolicyName, Limit: cfg.MFAMaxAttempts, Window: cfg.MFAWindow},
		Metrics: rm, Logger: log, OwnerCheck: sessions.OwnerCheck(h), Outbox: sessionEvents, Events: retention, Relay: d.Relay.Notify,
	})
	if errors.Is(err, sessionstore.ErrLayoutUnsupported) {
		return nil, fmt.Errorf("GATEWAY_SESSION_LAYOUT=%s: %w; set GATEWAY_SESSION_LAYOUT=per-session (or use Redis >= 7.4)",
			sessionLayout(cfg, s), err)
	}
	if err != nil {
		return nil, err
	}
	if d.Sessions, err = sessions.New(sr, h, sessions.Config{
		IdleTimeout: cfg.SessionIdleTimeout, AbsoluteTimeout: cfg.SessionAbsoluteTimeout,
		ChallengeTTL: cfg.MFAChallengeTTL, Logger: log, RecentWritesMax: cfg.RecentWritesMax,
		Meter: tel.Meter("github.com/hashgate/hashgate/internal/sessions"), Audit: d.Audit, Events: sessionEvents,
	}); err != nil {
		return nil, err
	}

	idem, err := idemstore.New(s, idemstore.Options{Prefix: cfg.KeyPrefix, Hasher: h,
		TTL: cfg.IdempotencyTTL, Lease: idemstore.LeaseFor(cfg.RedisTimeout),
		MaxPerTenant: cfg.TenantMaxIdempotencyKeys, Metrics: rm, Logger: log})
	if err != nil {
		return nil, err
	}
	qr, err := quotestore.New(s, quotestore.Options{Prefix: cfg.KeyPrefix, Hasher: h, TTL: cfg.QuoteTTL,
		MaxItems: cfg.QuoteMaxItems, MaxPerTenant: cfg.TenantMaxQuotes, Retention: retention, Metrics: rm, Logger: log})
	if err != nil {
		return nil, err
	}
	cr, err := casestore.New(s, casestore.Options{Prefix: cfg.KeyPrefix, Hasher: h,
		MaxEscalation: cfg.CaseMaxEscalation, OpenTTL: cfg.CaseOpenTTL, ResolvedTTL: cfg.CaseResolvedTTL,
		HistoryMax: cfg.CaseHistoryMax, MaxPerTenant: cfg.TenantMaxCases, Retention: retention, Metrics: rm, Logger: log})
	if err != nil {
		return nil, err
	}
	once := idempotency.New(idem, h, log)
	if d.Quotes, err = quotes.New(qr, once); err != nil {
		return nil, err
	}
	if d.Cases, err = cases.New(cr, once); err != nil {
		return nil, err
	}
	if d.Sweeper, err = cases.NewSweeper(cr, cfg.CaseSweepInterval, log, rm); err != nil {
		return nil, err
	}
	if err := buildWebhooks(&d, cfg, s, h, rm, tel, log); err != nil {
		return nil, err
	}
	return &d, nil
}

// negativeOff maps a configured cache TTL, where 0 turns the cache off, to the repository's
// options, where 0 means the default and a negative TTL turns it off.
func negativeOff(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// entries maps a configured cache size, where 0 turns the cache off, to the options of the
// packages, where 0 means their default and a negative size turns it off.
func entries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// sessionLayout is GATEWAY_SESSION_LAYOUT, or when unset its default: per-user on Redis,
// per-session on the embedded store (no REDIS_URL; it has no hash field expiry). Configuration
// alone decides: a Redis that cannot host the layout fails the start (sessionstore.Hosts), and
// upgrading Redis never switches it.
func sessionLayout(cfg config.Config, s *store.Store) sessionstore.SessionLayout {
	switch {
	case cfg.SessionLayout != "":
		return sessionstore.SessionLayout(cfg.SessionLayout)
	case s.Caps.Embedded:
		return sessionstore.LayoutPerSession
	}
	return sessionstore.LayoutPerUser
}

// buildWebhooks wires the webhook store, the service and the deliverer into d.
func buildWebhooks(d *Domains, cfg config.Config, s *store.Store, h *keyhash.Hasher, rm *repo.Metrics, tel *telemetry.Telemetry, log *slog.Logger) error {
	wr, err := webhookstore.New(s, webhookstore.Options{Prefix: cfg.KeyPrefix, Hasher: h,
		MaxPerTenant: cfg.TenantMaxWebhooks, Metrics: rm, Logger: log})
	if err != nil {
		return err
	}
	if d.Webhooks, err = webhooks.New(wr, h, webhooks.Options{TTL: cfg.WebhookTTL, AllowPrivate: cfg.WebhookAllowPrivate,
		Timeout: cfg.WebhookTimeout, Logger: log}); err != nil {
		return err
	}
	d.Deliverer, err = webhooks.NewDeliverer(wr, h, webhooks.DeliverOptions{RetryBase: cfg.WebhookRetryBase,
		RetryWindow: cfg.WebhookRetryWindow, Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.WebhookAllowPrivate, Logger: log,
		Meter: tel.Meter("github.com/hashgate/hashgate/internal/webhooks")})
	return err
}

// sessionEventSet is which session events are written: GATEWAY_SESSION_EVENTS, none while
// GATEWAY_EVENTS=false.
func sessionEventSet(cfg config.Config) events.SessionEvents {
	if !cfg.Events {
		return events.SessionEventsOff
	}
	return events.SessionEvents(cfg.SessionEvents)
}
