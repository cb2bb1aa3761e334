package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store"
)

// Quote statuses.
const (
	QuoteDraft     = "DRAFT"
	QuoteSubmitted = "SUBMITTED"
)

// Bounds of a quote draft. Amounts are int64 minor units, but the item scripts add and multiply
// them as Lua numbers (IEEE doubles), which are exact only up to 2^53. Every amount — unit
// price, line total, subtotal, discount, tax, total — is therefore refused above
// MaxAmountMinor (2^53-1, about 90 trillion in a two-decimal currency): below that bound the
// double arithmetic in the scripts is exact, and no int64 can overflow.
const (
	MaxAmountMinor     int64 = 1<<53 - 1
	MaxItemQuantity    int64 = 1_000_000
	MaxItemBytes             = 2048
	MaxQuoteItemsLimit       = 1000
	DefaultQuoteTTL          = 7 * 24 * time.Hour
	DefaultQuoteItems        = 100
	// QuotePricingVersion is the version of the pricing rules totals are computed with.
	QuotePricingVersion = 1
)

var (
	quoteIDPattern = regexp.MustCompile(`^q_[0-9a-hjkmnp-tv-z]{26}$`)
	itemIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	skuPattern     = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)
	refPattern     = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	channelPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)
)

// ErrBadOptions reports an unusable repository option.
var ErrBadOptions = errors.New("repo: bad options")

// Quote is a quote draft's summary. Totals always satisfy
// TotalMinor = SubtotalMinor - DiscountMinor + TaxMinor and SubtotalMinor = Σ line totals.
type Quote struct {
	ID             string
	Tenant         string
	CustomerID     string
	SalesChannel   string
	Status         string
	Currency       string
	SubtotalMinor  int64
	DiscountMinor  int64
	TaxMinor       int64
	TotalMinor     int64
	ItemCount      int
	PricingVersion int64
	StateVersion   int64
	SchemaVersion  int
	CreatedAt      time.Time
	UpdatedAt      time.Time
	ExpiresAt      time.Time
	SubmittedAt    time.Time // zero until submitted
}

// QuoteItem is one line item.
type QuoteItem struct {
	ID             string
	SKU            string
	Quantity       int64
	UnitPriceMinor int64
	LineTotalMinor int64 // computed; ignored on writes
	Description    string
}

// NewQuote is what Create needs. ID is optional: an idempotent create passes the id it
// planned when it claimed the Idempotency-Key, so a retry after a crash lands on the same draft.
type NewQuote struct {
	ID           string
	Tenant       string
	CustomerID   string
	SalesChannel string
	Currency     string
}

// QuotePatch is a merge patch: nil fields are left as they are.
type QuotePatch struct {
	CustomerID    *string
	SalesChannel  *string
	DiscountMinor *int64
	TaxMinor      *int64
}

// QuoteOptions configure Quotes.
type QuoteOptions struct {
	Prefix   string
	TTL      time.Duration // after the last write; default 7 days
	MaxItems int           // default 100
	Metrics  *Metrics
	Logger   *slog.Logger
}

// Quotes keeps quote drafts: a summary hash and a line-items hash under the quote's own hash
// tag {q_<id>}, written only by the quote_* scripts.
type Quotes struct {
	c        rueidis.Client
	keys     Keys
	ttl      time.Duration
	maxItems int
	m        *Metrics
	log      *slog.Logger
}

// NewQuotes returns the quote repository on s.
func NewQuotes(s *store.Store, o QuoteOptions) (*Quotes, error) {
	if o.TTL == 0 {
		o.TTL = DefaultQuoteTTL
	}
	if o.MaxItems == 0 {
		o.MaxItems = DefaultQuoteItems
	}
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: quotes need a store", ErrBadOptions)
	case o.Prefix == "":
		return nil, fmt.Errorf("%w: quotes need a key prefix", ErrBadOptions)
	case o.TTL < time.Second:
		return nil, fmt.Errorf("%w: quote TTL %s is under 1s", ErrBadOptions, o.TTL)
	case o.MaxItems < 1 || o.MaxItems > MaxQuoteItemsLimit:
		return nil, fmt.Errorf("%w: quote max items %d not within 1..%d", ErrBadOptions, o.MaxItems, MaxQuoteItemsLimit)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Quotes{c: s.Client, keys: Keys{Prefix: o.Prefix}, ttl: o.TTL, maxItems: o.MaxItems, m: o.Metrics, log: o.Logger}, nil
}

// NewQuoteID returns a fresh, time-ordered quote id.
func NewQuoteID() string { return "q_" + auth.NewTokenID(time.Now()) }

// MaxItems is the configured bound on line items per quote.
func (r *Quotes) MaxItems() int { return r.maxItems }

func (r *Quotes) summaryKey(id string) string { return r.keys.Key("quote", id) }
func (r *Quotes) itemsKey(id string) string   { return r.keys.Key("quote", id, "items") }

var (
	scriptQuoteCreate = script("quote_create")
	scriptQuoteRead   = script("quote_read")
	scriptQuotePatch  = script("quote_patch")
	scriptQuoteItem   = script("quote_item_write")
	scriptQuoteSubmit = script("quote_submit")
	scriptQuoteDelete = script("quote_delete")
)

// Create writes a new DRAFT with zero totals. When in.ID names a draft that already exists
// for the same tenant (an idempotent create retried after a crash), that draft is returned.
func (r *Quotes) Create(ctx context.Context, in NewQuote) (*Quote, error) {
	if in.ID == "" {
		in.ID = NewQuoteID()
	}
	if err := validateNewQuote(in); err != nil {
		return nil, err
	}
	res := scriptQuoteCreate.Exec(ctx, r.c, []string{r.summaryKey(in.ID), r.itemsKey(in.ID)},
		[]string{in.ID, in.Tenant, in.CustomerID, in.SalesChannel, in.Currency, ms(r.ttl.Milliseconds()),
			strconv.Itoa(SchemaVersion), strconv.Itoa(QuotePricingVersion)})
	code, rest, err := scriptReply(res)
	if err != nil {
		r.m.ScriptError(ctx, "quote_create")
		return nil, redisErr("quote create", err)
	}
	switch code {
	case "OK", "EXISTS":
		q, err := r.decodeReply(ctx, rest, in.ID)
		if err != nil {
			return nil, err
		}
		if q.Tenant != in.Tenant {
			// Ids are random; only a forged planned id could collide. Never reveal it.
			return nil, apperr.New(apperr.Conflict, "The quote id is taken; retry without the Idempotency-Key.")
		}
		r.m.Transition(ctx, "quote", "create", createOutcome(code))
		return q, nil
	}
	return nil, r.unexpected(ctx, "quote_create", code)
}

// Get returns the tenant's quote, or NotFound (also for another tenant's quote).
func (r *Quotes) Get(ctx context.Context, tenant, id string) (*Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote get: %w", apperr.NotFound)
	}
	m, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.summaryKey(id)).Build()).AsStrMap()
	if err != nil {
		return nil, redisErr("quote get", err)
	}
	q, err := r.decode(ctx, m, id)
	if err != nil {
		return nil, err
	}
	if q.Tenant != tenant {
		return nil, fmt.Errorf("quote get: %w", apperr.NotFound)
	}
	return q, nil
}

// Items returns the quote's line items ordered by item id, with the stateVersion they belong
// to (summary and items are read in one script, so they are consistent).
func (r *Quotes) Items(ctx context.Context, tenant, id string) ([]QuoteItem, *Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, nil, fmt.Errorf("quote items: %w", apperr.NotFound)
	}
	res := scriptQuoteRead.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)}, []string{tenant})
	code, rest, err := scriptReply(res)
	if err != nil {
		r.m.ScriptError(ctx, "quote_read")
		return nil, nil, redisErr("quote items", err)
	}
	if code == "NOT_FOUND" {
		r.m.Read(ctx, "quote", Missing)
		return nil, nil, fmt.Errorf("quote items: %w", apperr.NotFound)
	}
	if code != "OK" || len(rest) != 2 {
		return nil, nil, r.unexpected(ctx, "quote_read", code)
	}
	q, err := r.decodeReply(ctx, rest[:1], id)
	if err != nil {
		return nil, nil, err
	}
	raw, err := rest[1].AsStrMap()
	if err != nil {
		return nil, nil, fmt.Errorf("quote items: %w", err)
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
	res := scriptQuoteDelete.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)}, []string{tenant})
	n, err := res.AsInt64()
	if err != nil {
		r.m.ScriptError(ctx, "quote_delete")
		return redisErr("quote delete", err)
	}
	outcome := "ok"
	if n == 0 {
		outcome = "absent"
	}
	r.m.Transition(ctx, "quote", "delete", outcome)
	return nil
}

func validateNewQuote(in NewQuote) error {
	switch {
	case !quoteIDPattern.MatchString(in.ID):
		return apperr.New(apperr.Validation, "The quote id is malformed.")
	case in.Tenant == "" || len(in.Tenant) > 128:
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case !refPattern.MatchString(in.CustomerID):
		return apperr.New(apperr.Validation, "customerId must be 1..64 of A-Z a-z 0-9 . _ : -")
	case !channelPattern.MatchString(in.SalesChannel):
		return apperr.New(apperr.Validation, "salesChannel must be 1..32 of A-Z a-z 0-9 . _ -")
	case !IsCurrency(in.Currency):
		return apperr.Newf(apperr.Unprocessable, "currency %q is not an ISO 4217 currency code.", clipValue(in.Currency))
	}
	return nil
}

// itemJSON is how one line item is stored in the items hash (field = item id). The scripts
// read quantity and unitPriceMinor from it to recompute the subtotal.
type itemJSON struct {
	SKU            string `json:"sku"`
	Quantity       int64  `json:"quantity"`
	UnitPriceMinor int64  `json:"unitPriceMinor"`
	Description    string `json:"description,omitempty"`
}

func decodeItems(raw map[string]string) ([]QuoteItem, error) {
	items := make([]QuoteItem, 0, len(raw))
	for id, v := range raw {
		var it itemJSON
		if err := json.Unmarshal([]byte(v), &it); err != nil || it.Quantity < 1 || it.UnitPriceMinor < 0 ||
			it.UnitPriceMinor > MaxAmountMinor || it.Quantity > MaxItemQuantity {
			return nil, fmt.Errorf("%w: quote item has malformed fields", ErrCorrupt)
		}
		line := it.Quantity * it.UnitPriceMinor // both bounded: no overflow
		items = append(items, QuoteItem{ID: id, SKU: it.SKU, Quantity: it.Quantity, UnitPriceMinor: it.UnitPriceMinor,
			LineTotalMinor: line, Description: it.Description})
	}
	slices.SortFunc(items, func(a, b QuoteItem) int { return strings.Compare(a.ID, b.ID) })
	return items, nil
}

// clipValue bounds an echoed input value and keeps it printable.
func clipValue(s string) string {
	if len(s) > 16 {
		s = s[:16]
	}
	if !utf8.ValidString(s) {
		return "?"
	}
	return s
}
