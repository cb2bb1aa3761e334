package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/api"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// app is the wired gateway: every dependency built once from the config.
type app struct {
	cfg    config.Config
	log    *slog.Logger
	tel    *telemetry.Telemetry
	store  *store.Store
	auth   *auth.Authority
	hasher *keyhash.Hasher
	deps   handlers.Deps
	// background loops (e.g. the case sweeper), started by serve and stopped with its context.
	background []func(ctx context.Context)
	// mint issues a token and records its metadata (set by wireDomains; used by the bootstrap
	// token and `token mint`).
	mint func(ctx context.Context, in mintInput) (string, time.Time, error)
}

type mintInput struct {
	Tenant, Subject, TokenType, Description string
	Scopes                                  []string
	TTL                                     time.Duration
}

// build wires the gateway from cfg. The caller closes a.store.
func build(ctx context.Context, cfg config.Config, log *slog.Logger, tel *telemetry.Telemetry) (*app, error) {
	a := &app{cfg: cfg, log: log, tel: tel}
	keys, hasher, err := secrets(cfg, log)
	if err != nil {
		return nil, err
	}
	a.hasher = hasher
	a.auth, err = auth.New(auth.Options{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Keys: keys})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	a.store, err = store.Open(ctx, store.Options{
		URL:          cfg.RedisURL,
		Timeout:      cfg.RedisTimeout,
		DisableCache: !cfg.RedisClientCache,
		ProbePrefix:  cfg.KeyPrefix,
		NewClient: func(o rueidis.ClientOption) (rueidis.Client, error) {
			return telemetry.NewRedisClient(o, tel)
		},
	})
	if err != nil {
		return nil, err
	}
	if err := a.store.LoadScripts(ctx, append(repo.ScriptBodies(), ratelimit.ScriptBodies()...)...); err != nil {
		a.store.Close()
		return nil, err
	}
	a.deps = handlers.Deps{
		Logger:         log,
		Version:        version,
		Store:          a.store,
		Caps:           a.store.Caps,
		Auth:           a.auth,
		RetryAfter:     cfg.RetryAfter,
		BodyLimitBytes: cfg.BodyLimitBytes,
		Spec:           api.Spec,
	}
	if err := wireDomains(ctx, a); err != nil {
		a.store.Close()
		return nil, err
	}
	return a, nil
}

// secrets loads the signing keys and the HMAC key, or makes fresh ones in embedded mode.
func secrets(cfg config.Config, log *slog.Logger) (*auth.KeySet, *keyhash.Hasher, error) {
	if cfg.Embedded() && cfg.SigningKeys == "" && cfg.HMACKey == "" {
		ks, err := auth.GenerateKeySet()
		if err != nil {
			return nil, nil, err
		}
		h, _, err := keyhash.Generate()
		return ks, h, err
	}
	if cfg.SigningKeys == "" || cfg.HMACKey == "" {
		return nil, nil, errors.New("GATEWAY_SIGNING_KEYS and GATEWAY_HMAC_KEY must be set together (see `gateway keygen`)")
	}
	ks, err := auth.ParseKeys(cfg.SigningKeys)
	if err != nil {
		return nil, nil, fmt.Errorf("GATEWAY_SIGNING_KEYS: %w", err)
	}
	h, err := keyhash.Parse(cfg.HMACKey)
	if err != nil {
		return nil, nil, fmt.Errorf("GATEWAY_HMAC_KEY: %w", err)
	}
	log.Info("signing keys loaded", "kids", ks.KIDs(), "signing_kid", ks.SigningKID())
	return ks, h, nil
}
