// Package casestore keeps escalation cases in Redis: a hash and a bounded history stream under
// the tenant's tag, with the tenant's quota set of live cases and its due index in the same
// slot, and a small registry of tenants for the sweepers, written only by the case_* scripts
// beside this file. It implements cases.Store and cases.DueStore; the case rules are the
// service's (internal/cases), the bounds the keys and scripts need are kept here.
package casestore

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

// Bounds and defaults of cases.
const (
	DefaultMaxEscalation = 3
	DefaultOpenTTL       = 90 * 24 * time.Hour
	DefaultResolvedTTL   = 30 * 24 * time.Hour
	DefaultHistoryMax    = 100
	DefaultPerTenant     = 50000
	// MaxPerTenant bounds GATEWAY_TENANT_MAX_CASES (the quota set's declared bound; a tenant's
	// due index holds at most as many, MaxDueCases).
	MaxPerTenant = MaxDueCases
	// MaxDueCases bounds one tenant's due index (its open cases with a due time).
	MaxDueCases = 100_000
	// MaxTenants bounds the registry of tenants the sweepers visit.
	MaxTenants = 10_000
	// tenantRegistryMargin keeps a tenant registered a little longer than its due index lives.
	tenantRegistryMargin = time.Hour
)

// caseIDPattern guards the keys: a case id reaches a key only in this shape.
var caseIDPattern = regexp.MustCompile(`^c_[0-9a-hjkmnp-tv-z]{26}$`)

// Options configure the store.
type Options struct {
	Prefix        string
	Hasher        *keyhash.Hasher
	MaxEscalation int           // default 3
	OpenTTL       time.Duration // TTL while not resolved, refreshed on each transition; default 90 days
	ResolvedTTL   time.Duration // TTL after resolution; default 30 days
	HistoryMax    int           // history stream MAXLEN; default 100
	// MaxPerTenant caps a tenant's live cases (GATEWAY_TENANT_MAX_CASES); default
	// DefaultPerTenant, at most MaxPerTenant.
	MaxPerTenant int
	// Retention bounds the tenant's event stream the scripts append to (default
	// events.DefaultMaxAge and DefaultMaxLen).
	Retention events.Retention
	Metrics   *repo.Metrics
	Logger    *slog.Logger
}

// Store keeps escalation cases (it implements cases.Store and cases.DueStore).
type Store struct {
	repo.Base
	writes        repo.Writes // every write but the due index's removals, confirmed
	maxEscalation int
	openTTL       time.Duration
	resolvedTTL   time.Duration
	historyMax    int
	retention     events.Retention         // the tenant's event stream's bounds (event_append.lua)
	objects       repo.Objects[cases.Case] // how a case hash reads, the tenant's quota
	// statusTags, levelTags: the value tags of every status and level (index.go)
	statusTags, levelTags string
}

var (
	_ cases.Store    = (*Store)(nil)
	_ cases.DueStore = (*Store)(nil)
)

// New returns the case store on s.
func New(s *store.Store, o Options) (*Store, error) {
	base, baseErr := repo.NewBase("cases", s, o.Prefix, o.Hasher, o.Metrics, o.Logger)
	quota, quotaErr := repo.TenantQuota("cases", "GATEWAY_TENANT_MAX_CASES", o.MaxPerTenant, DefaultPerTenant, MaxPerTenant)
	if err := errors.Join(baseErr, quotaErr,
		repo.DefaultWithin("case max escalation", &o.MaxEscalation, DefaultMaxEscalation, 1, 100),
		repo.DefaultAtLeast("case open TTL", &o.OpenTTL, DefaultOpenTTL, time.Second),
		repo.DefaultAtLeast("case resolved TTL", &o.ResolvedTTL, DefaultResolvedTTL, time.Second),
		repo.DefaultWithin("case history max", &o.HistoryMax, DefaultHistoryMax, 1, 10_000),
	); err != nil {
		return nil, err
	}
	r := &Store{Base: base, writes: repo.NewWrites(s, o.Metrics), maxEscalation: o.MaxEscalation,
		openTTL: o.OpenTTL, resolvedTTL: o.ResolvedTTL, historyMax: o.HistoryMax, retention: o.Retention.OrDefault()}
	r.objects = repo.Objects[cases.Case]{Type: "case", KeyPattern: "case:{c_*}", Map: mapCase,
		Tenant:  func(c *cases.Case) string { return c.Tenant },
		Quota:   quota,
		Metrics: r.Metrics, Log: r.Log}
	r.statusTags, r.levelTags = r.indexTagTables()
	return r, nil
}

// The keys of a case: its hash, its history and its tenant's quota set, all under the
// tenant's tag (as its due index is), so one script creates or moves a case and counts it
// exactly (GATEWAY_TENANT_MAX_CASES). Another tenant's id names a key that does not exist.
func (r *Store) caseKeys(tenantTag, id string) []string {
	hash := r.Keys.Key("case", tenantTag, id)
	return []string{hash, hash + ":history", r.Keys.Key("quota", tenantTag, "cases")}
}

// moveKeys are the keys of a script that moves a case: its keys, its tenant's list indexes and
// event stream.
func (r *Store) moveKeys(tenantTag, id string) []string {
	return append(append(r.caseKeys(tenantTag, id), r.indexKeys(tenantTag)...), r.Keys.EventStream(tenantTag))
}

// envelope is the event envelope of a change the caller on ctx makes (events.Envelope).
func (r *Store) envelope(ctx context.Context, tenant string) string {
	return events.Envelope(ctx, tenant, r.retention)
}

// dueKey is the tenant's due index.
func (r *Store) dueKey(tenantTag string) string { return r.Keys.Key("casedue", tenantTag) }

// registryKey is the registry of tenants the sweepers visit.
func (r *Store) registryKey() string { return r.Keys.Key("casetenants", "all") }

// TenantTag is the opaque tag naming tenant's due index (never the raw tenant id).
func (r *Store) TenantTag(tenant string) string { return r.Hasher.TenantTag(tenant) }

//go:embed *.lua
var scriptFiles embed.FS

var (
	scriptCreate     = repo.LoadScript(scriptFiles, "case_create")
	scriptTransition = repo.LoadScript(scriptFiles, "case_transition")
	scriptAuto       = repo.LoadScript(scriptFiles, "case_auto_escalate")
	scriptDueAdd     = repo.LoadScript(scriptFiles, "case_due_add")
	scriptTenantAdd  = repo.LoadScript(scriptFiles, "case_tenant_add")
	scriptTenants    = repo.LoadScript(scriptFiles, "case_tenants")
	scriptList       = repo.LoadScript(scriptFiles, "case_list")
)
