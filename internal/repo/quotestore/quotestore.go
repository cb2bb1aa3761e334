// Package quotestore keeps quote drafts in Redis: a summary hash and a line-items hash under
// the tenant's hash tag, with the tenant's quota set of live drafts, written only by the
// quote_* scripts beside this file. It implements quotes.Store; the draft rules are the
// service's (internal/quotes), the bounds the scripts enforce and the tenant's quota are kept
// here.
package quotestore

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"regexp"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

// A tenant's quota of live drafts.
const (
	DefaultPerTenant = 10000
	// MaxPerTenant bounds GATEWAY_TENANT_MAX_QUOTES (the quota set's declared bound).
	MaxPerTenant = 100000
)

// The key guards: ids and item ids reach keys and hash fields only in these shapes.
var (
	quoteIDPattern = regexp.MustCompile(`^q_[0-9a-hjkmnp-tv-z]{26}$`)
	itemIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Options configure the store.
type Options struct {
	Prefix   string
	TTL      time.Duration // after the last write; default 7 days
	MaxItems int           // default 100
	// Hasher names the tenant's tag, under which its drafts and their quota set live.
	Hasher *keyhash.Hasher
	// MaxPerTenant caps a tenant's live drafts (GATEWAY_TENANT_MAX_QUOTES); default
	// DefaultPerTenant, at most MaxPerTenant.
	MaxPerTenant int
	// Retention bounds the tenant's event stream the scripts append to (default
	// events.DefaultMaxAge and DefaultMaxLen).
	Retention events.Retention
	Metrics   *repo.Metrics
	Logger    *slog.Logger
}

// Store keeps quote drafts (it implements quotes.Store).
type Store struct {
	repo.Base
	writes   repo.Writes // every write, confirmed
	ttl      time.Duration
	maxItems int
	// retention bounds the tenant's event stream (event_append.lua)
	retention events.Retention
	objects   repo.Objects[quotes.Quote] // how a summary hash reads, the tenant's quota
}

var _ quotes.Store = (*Store)(nil)

// New returns the quote store on s.
func New(s *store.Store, o Options) (*Store, error) {
	base, baseErr := repo.NewBase("quotes", s, o.Prefix, o.Hasher, o.Metrics, o.Logger)
	quota, quotaErr := repo.TenantQuota("quotes", "GATEWAY_TENANT_MAX_QUOTES", o.MaxPerTenant, DefaultPerTenant, MaxPerTenant)
	if err := errors.Join(baseErr, quotaErr,
		repo.DefaultAtLeast("quote TTL", &o.TTL, quotes.DefaultTTL, time.Second),
		repo.DefaultWithin("quote max items", &o.MaxItems, quotes.DefaultMaxItems, 1, quotes.MaxItemsLimit),
	); err != nil {
		return nil, err
	}
	r := &Store{Base: base, writes: repo.NewWrites(s, o.Metrics), ttl: o.TTL, maxItems: o.MaxItems, retention: o.Retention.OrDefault()}
	r.objects = repo.Objects[quotes.Quote]{Type: "quote", KeyPattern: "quote:{q_*}", Map: r.mapQuote,
		Tenant:  func(q *quotes.Quote) string { return q.Tenant },
		Quota:   quota,
		Metrics: r.Metrics, Log: r.Log}
	return r, nil
}

// MaxItems is the configured bound on line items per quote.
func (r *Store) MaxItems() int { return r.maxItems }

// The keys of a draft: its summary, its items, its tenant's quota set and list indexes
// (quote_index.lua) and its event stream, all under the tenant's tag, so one script creates,
// writes or deletes a draft, counts it exactly (GATEWAY_TENANT_MAX_QUOTES), keeps the indexes
// and appends the change's event (docs/EVENTS.md). Another tenant's
// id names a key that does not exist.
func (r *Store) quoteKeys(tenant, id string) []string {
	tag := r.Hasher.TenantTag(tenant)
	summary := r.Keys.Key("quote", tag, id)
	keys := append([]string{summary, summary + ":items", r.Keys.Key("quota", tag, "quotes")}, r.indexKeys(tag)...)
	return append(keys, r.Keys.EventStream(tag))
}

//go:embed *.lua
var scriptFiles embed.FS

// envelope is the event envelope of a change the caller on ctx makes (events.Envelope).
func (r *Store) envelope(ctx context.Context, tenant string) string {
	return events.Envelope(ctx, tenant, r.retention)
}

var (
	scriptCreate = repo.LoadScript(scriptFiles, "quote_create")
	scriptRead   = repo.LoadScript(scriptFiles, "quote_read")
	scriptPatch  = repo.LoadScript(scriptFiles, "quote_patch")
	scriptItem   = repo.LoadScript(scriptFiles, "quote_item_write")
	scriptSubmit = repo.LoadScript(scriptFiles, "quote_submit")
	scriptDelete = repo.LoadScript(scriptFiles, "quote_delete")
	scriptList   = repo.LoadScript(scriptFiles, "quote_list")
)
