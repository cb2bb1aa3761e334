package main

import (
	"context"
	"log/slog"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/telemetry/redistrace"
)

// gateway is what build returns: the configuration, the store (the caller closes it) and the
// gateway internal/app built over them.
type gateway struct {
	cfg   config.Config
	log   *slog.Logger
	store *store.Store
	*app.Gateway
}

// build opens the store named by cfg (waiting up to cfg.RedisStartTimeout for it to be
// reachable), loads the scripts and builds the gateway through internal/app, the one
// composition root. The caller closes g.store.
func build(ctx context.Context, cfg config.Config, log *slog.Logger, tel *telemetry.Telemetry) (*gateway, error) {
	authority, hasher, err := app.Keys(cfg, log)
	if err != nil {
		return nil, err
	}
	so := app.StoreOptions(cfg)
	so.NewClient = redistrace.For(tel)
	s, err := openStore(ctx, so, app.ScriptBodies(), cfg.RedisStartTimeout, log)
	if err != nil {
		return nil, err
	}
	a, err := app.New(cfg, s, app.Options{Logger: log, Telemetry: tel, Version: version,
		Auth: authority, Hasher: hasher})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &gateway{cfg: cfg, log: log, store: s, Gateway: a}, nil
}
