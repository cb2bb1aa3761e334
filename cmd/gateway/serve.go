package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/tokens"
)

// maxHeaderBytes bounds a request's line and header fields (net/http answers 431 past it).
const maxHeaderBytes = 32 << 10

// serve runs the gateway until ctx is cancelled, then drains requests and flushes telemetry.
// When ready is non-nil it receives the listen address once the server accepts connections.
func serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := config.Load(getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, err := telemetry.ParseLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(stderr, level)
	log.Info("starting hashgate", append([]any{"version", version}, cfg.Fields()...)...)
	if gcTuning != (gcPlan{}) {
		log.Info("garbage collector tuned (set GOGC or GOMEMLIMIT to override)", "settings", gcTuning.String())
	}

	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "hashgate", ServiceVersion: version, RedisCommandLabels: cfg.RedisCommandLabels})
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry shutdown", "err", err)
		}
	}()

	g, err := build(ctx, cfg, log, tel)
	if err != nil {
		return err
	}
	defer g.store.Close()
	logStore(log, g.store.Caps)
	return runServer(ctx, g, stdout, ready)
}

// logStore reports what the store is and warns when it is the embedded one.
func logStore(log *slog.Logger, caps store.Capabilities) {
	if caps.Embedded {
		log.Warn("EMBEDDED STORE: no REDIS_URL is set, state lives in this process and is lost on exit; set REDIS_URL for real use")
	}
	log.Info("redis connected", "topology", caps.Topology, "field_expiry", caps.FieldExpiry,
		"server_version", caps.ServerVersion, "embedded", caps.Embedded, "client_cache", caps.ClientCache)
}

// runServer listens on cfg.Addr and serves g with its background loops until ctx is
// cancelled, then drains requests within cfg.ShutdownTimeout.
func runServer(ctx context.Context, g *gateway, stdout io.Writer, ready chan<- string) error {
	cfg, log := g.cfg, g.log
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	// net/http's own refusals (431, malformed requests, ...) leave as problems, not plain text.
	ln = handlers.ShapeRefusals(ln, maxHeaderBytes, cfg.PublicURL)
	hs := httpServer(cfg, g.Echo, log)
	addr := ln.Addr().String()
	if cfg.PprofAddr != "" {
		stopPprof, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			_ = ln.Close()
			return err
		}
		defer stopPprof()
	}
	if err := bootstrapToken(ctx, g, stdout, addr); err != nil {
		_ = ln.Close()
		return err
	}

	g.Start()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("listening", "addr", addr, "docs", "http://"+displayAddr(addr)+"/docs")
	if ready != nil {
		ready <- addr
	}
	select {
	case err := <-errc:
		g.Stop()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", cfg.ShutdownTimeout.String())
	g.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// httpServer serves h with the configured timeouts.
func httpServer(cfg config.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// bootstrapToken mints an admin token for the bootstrap tenant with every scope. It is written
// to GATEWAY_BOOTSTRAP_TOKEN_FILE (0600) when set, and printed to stdout in embedded mode so a
// newcomer can curl at once. It never goes to the log.
func bootstrapToken(ctx context.Context, a *gateway, stdout io.Writer, addr string) error {
	if a.cfg.BootstrapTokenFile == "" && !a.cfg.Embedded() {
		return nil
	}
	out, err := a.Tokens.Mint(ctx, tokens.MintRequest{
		Tenant: a.cfg.BootstrapTenant, Subject: "bootstrap-admin", TokenType: tokens.TypeService,
		Scopes: auth.KnownScopes(), TTL: a.cfg.BootstrapTokenTTL, Description: "bootstrap admin token",
	})
	if err != nil {
		return fmt.Errorf("bootstrap token: %w", err)
	}
	tok, exp := out.Token, out.ExpiresAt
	if f := a.cfg.BootstrapTokenFile; f != "" {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return fmt.Errorf("bootstrap token file: %w", err)
		}
		if err := os.WriteFile(f, []byte(tok+"\n"), 0o600); err != nil {
			return fmt.Errorf("bootstrap token file: %w", err)
		}
		a.log.Info("bootstrap admin token written", "file", f, "tenant", a.cfg.BootstrapTenant, "expires_at", exp)
	}
	if a.cfg.Embedded() {
		url := "http://" + displayAddr(addr)
		fmt.Fprintf(stdout, `
  hashgate is running on an EMBEDDED in-process store (no REDIS_URL): state is lost on exit.
  Set REDIS_URL to use a real Redis. Listening on %s

  Bootstrap admin token (tenant %q, every scope, expires %s):

    export HG_TOKEN=%s

  API reference (try it in the browser; Authorize with the token): %s/docs

  Try:
    curl -s %s/readyz
    curl -s -H "Authorization: Bearer $HG_TOKEN" %s/v1/tokens

`, url, a.cfg.BootstrapTenant, exp.UTC().Format(time.RFC3339), tok, url, url, url)
	}
	return nil
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
