// Package app is the gateway's one composition root: from the configuration and an open store
// it builds every service, the HTTP server over them and the background loops they need.
// cmd/gateway, the handler tests and the fault suites all build their gateway through New, so
// the tests exercise the wiring users get rather than a copy of it.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/api"
	"github.com/hashgate/hashgate/internal/accessrules"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit/ratesync"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// Options are what New takes besides the configuration and the store. Every field is optional.
type Options struct {
	Logger    *slog.Logger         // nil: discard
	Telemetry *telemetry.Telemetry // nil: no telemetry
	Version   string               // reported by the operator listener's /readyz
	Spec      []byte               // served at /openapi.yaml; nil: api.Spec
	// Auth and Hasher replace the keys from the configuration (tests: replicas sharing keys).
	// Nil: GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY, or fresh keys in embedded mode.
	Auth   *auth.Authority
	Hasher *keyhash.Hasher
	// Override adjusts the server's dependencies after the services are built and before the
	// server is: a test's seam to wrap or replace one service. The result is still checked.
	Override func(*handlers.Deps)
	// Now is the clock of the JWT authority (built here when Auth is nil) and of the token
	// checks (tests step it); nil: time.Now. What Redis decides (expiry, due times, rate
	// windows in scripts) runs on Redis TIME whatever this says.
	Now func() time.Time
}

// Gateway is the built gateway: the HTTP handler, the services behind it and the background
// loops, which Start runs and Stop ends.
type Gateway struct {
	Echo *echo.Echo
	// Admin serves the operator listener: detailed readiness and /metrics (admin.go).
	Admin  *echo.Echo
	Server *handlers.Server
	Auth   *auth.Authority
	Hasher *keyhash.Hasher
	*Domains

	loops []func(ctx context.Context)
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// New builds the gateway from cfg over s (open, scripts loaded). It fails when the keys are
// missing or invalid, or when a dependency the server needs is missing.
func New(cfg config.Config, s *store.Store, o Options) (*Gateway, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Spec == nil {
		o.Spec = api.Spec
	}
	g := &Gateway{Auth: o.Auth, Hasher: o.Hasher}
	if g.Auth == nil || g.Hasher == nil {
		a, h, err := keys(cfg, o.Logger, o.Now)
		if err != nil {
			return nil, err
		}
		if g.Auth == nil {
			g.Auth = a
		}
		if g.Hasher == nil {
			g.Hasher = h
		}
	}
	d, err := buildDomains(cfg, s, g.Auth, g.Hasher, o.Telemetry, o.Logger, o.Now)
	if err != nil {
		return nil, err
	}
	g.Domains = d
	g.loops = append(g.loops, d.Sweeper.Run, d.Audit.Run)
	refusals := d.Refusals
	if cfg.Events {
		g.loops = append(g.loops, d.Relay.Run, d.Refusals.Run, d.Deliverer.Run)
	} else {
		refusals = nil // no refusal events either
	}
	limits, limiter, err := buildRateLimits(cfg, s, g.Hasher, o.Telemetry, o.Logger)
	if err != nil {
		return nil, err
	}
	if limiter != nil {
		g.loops = append(g.loops, limiter.Run)
	}

	deps := handlers.Deps{
		Logger: o.Logger, Version: o.Version, Store: s, Caps: s.Caps, Auth: g.Auth,
		RetryAfter: cfg.RetryAfter, BodyLimitBytes: cfg.BodyLimitBytes, Spec: o.Spec, PublicURL: cfg.PublicURL,
		Tokens: d.Tokens, TokenCheck: d.Tokens,
		Sessions: d.Sessions, SessionAuth: d.Sessions,
		Quotes: d.Quotes, Cases: d.Cases, Webhooks: d.Webhooks, RateLimits: limits,
		Events: d.Events, EventsOff: !cfg.Events, SessionEvents: sessionEventSet(cfg), EventStream: handlers.EventStreamOptions{KeepAlive: cfg.EventsKeepAlive}, Audit: d.Audit,
		Refusals:         refusals,
		Meter:            o.Telemetry.Meter("github.com/hashgate/hashgate/internal/handlers"),
		AssertionEntries: assertionEntries(cfg),
	}
	if cfg.AccessRules != "" {
		rules, err := accessrules.Open(cfg.AccessRules, o.Logger, o.Telemetry.Meter("github.com/hashgate/hashgate/internal/accessrules"))
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_ACCESS_RULES: %w", err)
		}
		deps.Rules = rules
		g.loops = append(g.loops, func(ctx context.Context) { rules.Watch(ctx, 0) })
	}
	if o.Override != nil {
		o.Override(&deps)
	}
	if g.Server, err = handlers.NewServer(deps); err != nil {
		return nil, err
	}
	if g.Echo, err = handlers.NewEcho(g.Server, o.Telemetry); err != nil {
		return nil, err
	}
	g.Admin = newAdmin(g.Server, o.Telemetry)
	return g, nil
}

// Start runs the background loops (the case sweeper, the webhook deliverer, the rate
// limiter's flush) until Stop.
func (g *Gateway) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	for _, loop := range g.loops {
		g.wg.Add(1)
		go func() { defer g.wg.Done(); loop(ctx) }()
	}
}

// Stop ends the background loops and waits for them. It is safe without Start.
func (g *Gateway) Stop() {
	if g.Server != nil {
		g.Server.CloseStreams()
	}
	if g.stop != nil {
		g.stop()
	}
	g.wg.Wait()
}

// ScriptBodies are the Lua scripts the gateway runs, for store.LoadScripts at start.
func ScriptBodies() []string {
	return append(repo.ScriptBodies(), ratesync.ScriptBodies()...)
}

// assertionEntries bounds forward auth's kept assertions by the credentials the gateway keeps
// decoded (the session memo and the verified-token cache), so a credential answered from those
// is not signed again, at most auth.DefaultAssertionCacheSize and at least 1,024.
func assertionEntries(cfg config.Config) int {
	return max(min(cfg.SessionCacheEntries+cfg.TokenVerifyCacheEntries, auth.DefaultAssertionCacheSize), 1024)
}
