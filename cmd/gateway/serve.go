package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// maxHeaderBytes bounds a request's line and header fields (net/http answers 431 past it).
const maxHeaderBytes = 32 << 10

// serveCommand is `gateway [serve] [--env-file F]`.
func serveCommand(ctx context.Context, args []string, env environ, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve the API until SIGINT/SIGTERM (settings: environment variables, README \"Configure it\")")
	e, done, err := envOnly(fs, args, env, stdout)
	if done {
		return err
	}
	return serveWith(ctx, e, env.names, stdout, stderr, nil)
}

// serve runs the gateway on getenv's settings alone (tests).
func serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	return serveWith(ctx, config.Env{Lookup: getenv}, nil, stdout, stderr, ready)
}

// serveWith runs the gateway until ctx is cancelled, then drains requests and flushes
// telemetry. names are the environment's variable names, checked for misspelt GATEWAY_* ones.
// When ready is non-nil it receives the listen address once the server accepts connections.
func serveWith(ctx context.Context, e config.Env, names []string, stdout, stderr io.Writer, ready chan<- string) error {
	cfg, err := config.LoadEnv(e)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	level, err := telemetry.ParseLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(stderr, level)
	log.Info("starting hashgate", append([]any{"version", version, "env_file", e.FilePath}, cfg.Fields()...)...)
	warnUnknown(log, e, names)
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
		if ctx.Err() != nil { // SIGINT/SIGTERM while waiting for Redis: a clean stop
			log.Info("stopped before the start completed", "err", err)
			return nil
		}
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
	stopAdmin, err := serveAdmin(cfg.AdminAddr, g.Admin, log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	defer stopAdmin()
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
	log.Info("listening", "addr", addr, "docs", "http://"+displayAddr(addr)+"/docs", "reach", reach(addr))
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

// reach says who can connect to addr: "this machine only" on loopback, else "the network".
func reach(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return "this machine only (loopback)"
	}
	return "every interface: the network can connect"
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
