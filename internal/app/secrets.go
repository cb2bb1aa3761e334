package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// Keys are the JWT authority and the HMAC hasher from cfg (see secrets). cmd/gateway calls it
// before connecting to Redis, so a key error is reported first.
func Keys(cfg config.Config, log *slog.Logger) (*auth.Authority, *keyhash.Hasher, error) {
	return keys(cfg, log, nil)
}

// keys is Keys with the authority's clock (nil: time.Now).
func keys(cfg config.Config, log *slog.Logger, now func() time.Time) (*auth.Authority, *keyhash.Hasher, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ks, h, err := secrets(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	a, err := auth.New(auth.Options{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Keys: ks,
		VerifyCacheSize: entries(cfg.TokenVerifyCacheEntries), Now: now})
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	return a, h, nil
}

// FreshKeys are a new signing key set and HMAC key, as embedded mode makes at each start: for
// tests that run against a real Redis without configured keys.
func FreshKeys(cfg config.Config) (*auth.Authority, *keyhash.Hasher, error) {
	ks, err := auth.GenerateKeySet()
	if err != nil {
		return nil, nil, err
	}
	h, _, err := keyhash.Generate()
	if err != nil {
		return nil, nil, err
	}
	a, err := auth.New(auth.Options{Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Keys: ks,
		VerifyCacheSize: entries(cfg.TokenVerifyCacheEntries)})
	if err != nil {
		return nil, nil, fmt.Errorf("auth: %w", err)
	}
	return a, h, nil
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
