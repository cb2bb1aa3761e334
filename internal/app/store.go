package app

import (
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
)

// StoreOptions are the store settings cfg names (the caller may set NewClient: cmd/gateway
// passes telemetry's instrumented constructor).
func StoreOptions(cfg config.Config) store.Options {
	var bcast []string
	if cfg.RedisClientTracking == "bcast" {
		// The session hot path and the token check read through the client-side cache.
		bcast = []string{sessionstore.CachedKeyPrefix(cfg.KeyPrefix), cfg.KeyPrefix + ":v1:token:"}
	}
	return store.Options{
		BroadcastPrefixes:  bcast,
		URL:                cfg.RedisURL,
		Timeout:            cfg.RedisTimeout,
		DisableCache:       !cfg.RedisClientCache,
		CacheBytesEachConn: cfg.RedisClientCacheBytes,
		ProbePrefix:        cfg.KeyPrefix,
		Durability:         durability(cfg),
	}
}

// durability is the store's setting for confirmed writes (GATEWAY_DURABLE_*).
func durability(cfg config.Config) *store.Durability {
	d := cfg.Durability()
	return &store.Durability{Replicas: d.Replicas, Timeout: d.Timeout, NoAOF: d.NoAOF, CredentialsOnly: d.CredentialsOnly,
		UnconfirmedReads: d.UnconfirmedReads}
}
