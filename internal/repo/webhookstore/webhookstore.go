// Package webhookstore keeps webhooks in Redis beside their tenant's event stream: a hash per
// webhook, the tenant's quota set (its list of webhooks), a delivery lease and the recent
// delivery records per webhook, all under the tenant's tag, and a small registry of tenants for
// the deliverers; each webhook reads the stream through a consumer group of its own, named by
// its id. Written only by the webhook_* scripts beside this file. It implements
// webhooks.Store; the rules are the service's (internal/webhooks). Keys: docs/KEYS.md.
package webhookstore

import (
	"embed"
	"errors"
	"log/slog"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// Bounds and defaults.
const (
	DefaultPerTenant = 20
	// MaxPerTenant bounds GATEWAY_TENANT_MAX_WEBHOOKS.
	MaxPerTenant = 100
	// MaxTenants bounds the registry of tenants the deliverers visit.
	MaxTenants = 10_000
	// DefaultRecordsTTL is how long a webhook's delivery records outlive their last write.
	DefaultRecordsTTL = 7 * 24 * time.Hour
)

// Options configure the store.
type Options struct {
	Prefix string
	Hasher *keyhash.Hasher
	// MaxPerTenant caps a tenant's webhooks (GATEWAY_TENANT_MAX_WEBHOOKS); default
	// DefaultPerTenant, at most MaxPerTenant.
	MaxPerTenant int
	// Records is how many delivery records a webhook keeps; default webhooks.DefaultRecentDeliveries.
	Records int
	// RecordsTTL is how long the records outlive their last write; default DefaultRecordsTTL.
	RecordsTTL time.Duration
	Metrics    *repo.Metrics
	Logger     *slog.Logger
}

// Store keeps webhooks (it implements webhooks.Store).
type Store struct {
	repo.Base
	writes     repo.Writes
	records    int
	recordsTTL time.Duration
	objects    repo.Objects[webhooks.Webhook]
}

var _ webhooks.Store = (*Store)(nil)

// New returns the webhook store on s.
func New(s *store.Store, o Options) (*Store, error) {
	base, baseErr := repo.NewBase("webhooks", s, o.Prefix, o.Hasher, o.Metrics, o.Logger)
	quota, quotaErr := repo.TenantQuota("webhooks", "GATEWAY_TENANT_MAX_WEBHOOKS", o.MaxPerTenant, DefaultPerTenant, MaxPerTenant)
	if err := errors.Join(baseErr, quotaErr,
		repo.DefaultWithin("webhook delivery records", &o.Records, webhooks.DefaultRecentDeliveries, 1, 1000),
		repo.DefaultAtLeast("webhook records TTL", &o.RecordsTTL, DefaultRecordsTTL, time.Minute),
	); err != nil {
		return nil, err
	}
	r := &Store{Base: base, writes: repo.NewWrites(s, o.Metrics), records: o.Records, recordsTTL: o.RecordsTTL}
	r.objects = repo.Objects[webhooks.Webhook]{Type: "webhook", KeyPattern: "webhook:{wh_*}", Map: mapWebhook,
		Tenant:  func(w *webhooks.Webhook) string { return w.Tenant },
		Quota:   quota,
		Metrics: r.Metrics, Log: r.Log}
	return r, nil
}

// The keys of a tenant's webhooks, all under the tenant's tag, which the tenant's event
// stream (internal/events) carries too.
func (r *Store) hashKey(tag, id string) string    { return r.Keys.Key("webhook", tag, id) }
func (r *Store) quotaKey(tag string) string       { return r.Keys.Key("quota", tag, "webhooks") }
func (r *Store) streamKey(tag string) string      { return r.Keys.Key("events", tag) }
func (r *Store) leaseKey(tag, id string) string   { return r.Keys.Key("webhooklease", tag, id) }
func (r *Store) recordsKey(tag, id string) string { return r.Keys.Key("webhookdeliveries", tag, id) }
func (r *Store) registryKey() string              { return r.Keys.Key("webhooktenants", "all") }

// settleKeys are webhook_settle's keys.
func (r *Store) settleKeys(tag, id string) []string {
	rec := r.recordsKey(tag, id)
	return []string{r.leaseKey(tag, id), rec, rec + ":recent", r.streamKey(tag)}
}

//go:embed *.lua
var scriptFiles embed.FS

var (
	scriptCreate    = repo.LoadScript(scriptFiles, "webhook_create")
	scriptDelete    = repo.LoadScript(scriptFiles, "webhook_delete")
	scriptGroup     = repo.LoadScript(scriptFiles, "webhook_group")
	scriptTenantAdd = repo.LoadScript(scriptFiles, "webhook_tenant_add")
	scriptLease     = repo.LoadScript(scriptFiles, "webhook_lease")
	scriptRelease   = repo.LoadScript(scriptFiles, "webhook_release")
	scriptSettle    = repo.LoadScript(scriptFiles, "webhook_settle")
)
