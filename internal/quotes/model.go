package quotes

import (
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/idempotency"
)

// Quote statuses.
const (
	Draft     = "DRAFT"
	Submitted = "SUBMITTED"
)

// Bounds of a quote draft. Amounts are int64 minor units, but the item scripts add and multiply
// them as Lua numbers (IEEE doubles), which are exact only up to 2^53. Every amount — unit
// price, line total, subtotal, discount, tax, total — is therefore refused above
// MaxAmountMinor (2^53-1, about 90 trillion in a two-decimal currency): below that bound the
// double arithmetic in the scripts is exact, and no int64 can overflow.
const (
	MaxAmountMinor  int64 = 1<<53 - 1
	MaxItemQuantity int64 = 1_000_000
	MaxItemBytes          = 2048
	MaxItemsLimit         = 1000
	DefaultTTL            = 7 * 24 * time.Hour
	DefaultMaxItems       = 100
	// PricingVersion is the version of the pricing rules totals are computed with.
	PricingVersion = 1
)

// AnyVersion as a write's ifMatch matches whatever stateVersion is current (If-Match: *); the
// write still needs the quote to exist.
const AnyVersion int64 = -1

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

// Item is one line item.
type Item struct {
	ID             string
	SKU            string
	Quantity       int64
	UnitPriceMinor int64
	LineTotalMinor int64 // computed; ignored on writes
	Description    string
}

// NewQuote is what Create needs. ID is optional: an idempotent create passes the id derived
// from its Idempotency-Key (DerivedID), so a retry after a crash or a timeout lands on the
// same draft.
type NewQuote struct {
	ID string
	// Keyed: ID was derived from an Idempotency-Key, so a draft may already exist under it
	// (an attempt of the same request that ran late); a random ID names no draft.
	Keyed        bool
	Tenant       string
	CustomerID   string
	SalesChannel string
	Currency     string
}

// Patch is a merge patch: nil fields are left as they are.
type Patch struct {
	CustomerID    *string
	SalesChannel  *string
	DiscountMinor *int64
	TaxMinor      *int64
}

// NewID returns a fresh, time-ordered quote id.
func NewID() string { return "q_" + auth.NewTokenID(time.Now()) }

// DerivedID is the quote id of an idempotent create: sum (a keyed hash of the tenant, the
// operation, the Idempotency-Key and the request) in NewID's shape, so every attempt of one
// keyed request names the same quote.
func DerivedID(sum [16]byte) string { return "q_" + auth.TokenIDFrom(sum) }

// IDs are the quote ids the idempotent create uses.
var IDs = idempotency.IDs{Fresh: NewID, Derived: DerivedID}
