package app

import (
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
)

// StoreOptions are the store settings cfg names (the caller may set NewClient: cmd/gateway
// passes telemetry's instrumented constructor).
func StoreOptions(cfg config.Config) store.Options {
	return store.Options{
		URL:                cfg.RedisURL,
		Timeout:            cfg.RedisTimeout,
		DisableCache:       !cfg.RedisClientCache,
		CacheBytesEachConn: cfg.RedisClientCacheBytes,
		ProbePrefix:        cfg.KeyPrefix,
	}
}
