package repo

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/store"
)

// The key guards: ids and item ids reach keys and hash fields only in these shapes.
var (
	quoteIDPattern = regexp.MustCompile(`^q_[0-9a-hjkmnp-tv-z]{26}$`)
	itemIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Tenant quota of live drafts.
const (
	DefaultQuotesPerTenant = 10000
	// MaxQuotesPerTenant bounds GATEWAY_TENANT_MAX_QUOTES (the set's declared bound).
	MaxQuotesPerTenant = 100000
)

// QuoteOptions configure Quotes.
type QuoteOptions struct {
	Prefix   string
	TTL      time.Duration // after the last write; default 7 days
	MaxItems int           // default 100
	// Hasher names the tenant's tag, under which its drafts and their quota set live.
	Hasher *keyhash.Hasher
	// MaxPerTenant caps a tenant's live drafts (GATEWAY_TENANT_MAX_QUOTES); default
	// DefaultQuotesPerTenant, at most MaxQuotesPerTenant.
	MaxPerTenant int
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Quotes keeps quote drafts: a summary hash and a line-items hash under the tenant's hash tag,
// with the tenant's quota set of live drafts (quoteKeys), written only by the quote_* scripts. It
// implements quotes.Store; the draft rules are the service's (internal/quotes), the bounds the
// scripts enforce and the tenant's quota are kept here.
type Quotes struct {
	c        rueidis.Client
	keys     Keys
	h        *keyhash.Hasher
	ttl      time.Duration
	maxItems int
	max      int // the tenant's quota of live drafts
	m        *Metrics
	log      *slog.Logger
}

var _ quotes.Store = (*Quotes)(nil)

// NewQuotes returns the quote repository on s.
func NewQuotes(s *store.Store, o QuoteOptions) (*Quotes, error) {
	if o.TTL == 0 {
		o.TTL = quotes.DefaultTTL
	}
	if o.MaxItems == 0 {
		o.MaxItems = quotes.DefaultMaxItems
	}
	o.MaxPerTenant = cmp0(o.MaxPerTenant, DefaultQuotesPerTenant)
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: quotes need a store", ErrBadOptions)
	case o.Prefix == "" || o.Hasher == nil:
		return nil, fmt.Errorf("%w: quotes need a key prefix and a hasher", ErrBadOptions)
	case o.MaxPerTenant < 1 || o.MaxPerTenant > MaxQuotesPerTenant:
		return nil, fmt.Errorf("%w: quotes per tenant %d not within 1..%d", ErrBadOptions, o.MaxPerTenant, MaxQuotesPerTenant)
	case o.TTL < time.Second:
		return nil, fmt.Errorf("%w: quote TTL %s is under 1s", ErrBadOptions, o.TTL)
	case o.MaxItems < 1 || o.MaxItems > quotes.MaxItemsLimit:
		return nil, fmt.Errorf("%w: quote max items %d not within 1..%d", ErrBadOptions, o.MaxItems, quotes.MaxItemsLimit)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Quotes{c: s.Client, keys: Keys{Prefix: o.Prefix}, h: o.Hasher, ttl: o.TTL, maxItems: o.MaxItems, max: o.MaxPerTenant, m: o.Metrics, log: o.Logger}, nil
}

// MaxItems is the configured bound on line items per quote.
func (r *Quotes) MaxItems() int { return r.maxItems }

// The keys of a draft: its summary, its items and its tenant's quota set, all under the
// tenant's tag, so one script creates, writes or deletes a draft and counts it exactly
// (GATEWAY_TENANT_MAX_QUOTES). Another tenant's id names a key that does not exist.
func (r *Quotes) quoteKeys(tenantTag, id string) []string {
	sum := r.keys.Key("quote", tenantTag, id)
	return []string{sum, sum + ":items", r.keys.Key("quota", tenantTag, "quotes")}
}

var (
	scriptQuoteCreate = script("quote_create")
	scriptQuoteRead   = script("quote_read")
	scriptQuotePatch  = script("quote_patch")
	scriptQuoteItem   = script("quote_item_write")
	scriptQuoteSubmit = script("quote_submit")
	scriptQuoteDelete = script("quote_delete")
)

// The replies of the quote scripts (each script's header shows them); quotes_write.go has the
// write scripts'.
var (
	quoteCreateReplies = ReplyShapes{CodeOK: 1, CodeExists: 1, CodeQuota: 1} // {'OK'|'EXISTS', HGETALL summary} | {'QUOTA', ms}
	quoteReadReplies   = ReplyShapes{CodeOK: 2, CodeNotFound: 0}             // {'OK', summary, items} | {'NOT_FOUND'}
	quoteDeleteReplies = ReplyShapes{CodeOK: 0, CodeNotFound: 0}
)

// Create writes a new DRAFT with zero totals, counted in its tenant's quota in the same script
// (over it: 429 quota-exceeded, nothing written). When in.ID names a draft that already exists
// for the same tenant (an idempotent create retried after a crash), that draft is returned.
func (r *Quotes) Create(ctx context.Context, in quotes.NewQuote) (*quotes.Quote, error) {
	if in.ID == "" {
		in.ID = quotes.NewID()
	}
	switch { // the key guards; the draft's rules are the service's (quotes.Service.Create)
	case !quoteIDPattern.MatchString(in.ID):
		return nil, apperr.New(apperr.Validation, "The quote id is malformed.")
	case in.Tenant == "":
		return nil, apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	}
	rep, err := RunScript(ctx, r.c, r.m, "quote_create", "quote create", scriptQuoteCreate, r.quoteKeys(r.h.TenantTag(in.Tenant), in.ID),
		[]string{in.ID, in.Tenant, in.CustomerID, in.SalesChannel, in.Currency, FormatMs(r.ttl.Milliseconds()),
			strconv.Itoa(SchemaVersion), strconv.Itoa(quotes.PricingVersion), strconv.Itoa(r.max)})
	if err != nil {
		return nil, err
	}
	if err := quoteCreateReplies.Check(rep); err != nil {
		return nil, BadReply(ctx, r.m, "quote_create", err)
	}
	if rep.Code() == CodeQuota { // {'QUOTA', ms until the earliest live draft expires}
		wait, err := rep.Int(0)
		if err != nil {
			return nil, BadReply(ctx, r.m, "quote_create", err)
		}
		r.m.Transition(ctx, "quote", "create", "quota")
		return nil, QuotaError("quotes", "GATEWAY_TENANT_MAX_QUOTES", r.max, wait)
	}
	q, err := r.decodeReply(ctx, "quote_create", rep, in.ID)
	if err != nil {
		return nil, err
	}
	if q.Tenant != in.Tenant {
		// Ids are random; only a forged planned id could collide. Never reveal it.
		return nil, apperr.New(apperr.Conflict, "The quote id is taken; retry without the Idempotency-Key.")
	}
	r.m.Transition(ctx, "quote", "create", CreateOutcome(rep.Code()))
	return q, nil
}

// Get returns the tenant's quote, or NotFound (also for another tenant's quote).
func (r *Quotes) Get(ctx context.Context, tenant, id string) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote get: %w", apperr.NotFound)
	}
	m, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.quoteKeys(r.h.TenantTag(tenant), id)[0]).Build()).AsStrMap()
	if err != nil {
		return nil, CommandError("quote get", err)
	}
	return r.decode(ctx, m, id)
}

// Items returns the quote's line items ordered by item id, with the stateVersion they belong
// to (summary and items are read in one script, so they are consistent).
func (r *Quotes) Items(ctx context.Context, tenant, id string) ([]quotes.Item, *quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, nil, fmt.Errorf("quote items: %w", apperr.NotFound)
	}
	rep, err := r.run(ctx, "quote_read", "quote items", scriptQuoteRead, tenant, id, []string{tenant})
	if err != nil {
		return nil, nil, err
	}
	if err := quoteReadReplies.Check(rep); err != nil {
		return nil, nil, BadReply(ctx, r.m, "quote_read", err)
	}
	if rep.Code() == CodeNotFound {
		r.m.Read(ctx, "quote", Missing)
		return nil, nil, fmt.Errorf("quote items: %w", rep.Err(""))
	}
	q, err := r.decodeReply(ctx, "quote_read", rep, id)
	if err != nil {
		return nil, nil, err
	}
	raw, err := rep.StrMap(1)
	if err != nil {
		return nil, nil, BadReply(ctx, r.m, "quote_read", err)
	}
	items, err := decodeItems(raw)
	if err != nil {
		r.m.Read(ctx, "quote_items", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "quote:{q_*}:items", "fields", []string{"item"})
		return nil, nil, err
	}
	return items, q, nil
}

// Delete removes the tenant's draft and its items. Unknown ids and other tenants' quotes are
// left alone and answer nil (DELETE is idempotent and must not reveal existence).
func (r *Quotes) Delete(ctx context.Context, tenant, id string) error {
	if !quoteIDPattern.MatchString(id) {
		return nil
	}
	rep, err := r.run(ctx, "quote_delete", "quote delete", scriptQuoteDelete, tenant, id, []string{tenant, id})
	if err != nil {
		return err
	}
	// {'OK'} deleted | {'NOT_FOUND'} absent or another tenant's (left alone)
	if err := quoteDeleteReplies.Check(rep); err != nil {
		return BadReply(ctx, r.m, "quote_delete", err)
	}
	outcome := "ok"
	if rep.Code() == CodeNotFound {
		outcome = "absent"
	}
	r.m.Transition(ctx, "quote", "delete", outcome)
	return nil
}

// quotaKey is the tenant's quota set of live drafts.
func (r *Quotes) quotaKey(tenant string) string { return r.quoteKeys(r.h.TenantTag(tenant), "")[2] }

// run runs a script on the draft's keys (quoteKeys).
func (r *Quotes) run(ctx context.Context, name, op string, l *rueidis.Lua, tenant, id string, args []string) (Reply, error) {
	return RunScript(ctx, r.c, r.m, name, op, l, r.quoteKeys(r.h.TenantTag(tenant), id), args)
}
