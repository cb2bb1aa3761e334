package quotestore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
)

// Reading a draft's stored form: the summary hash (current and previous schema, its
// invariants) and the line items' JSON.

// mapQuote maps a summary hash (repo.Objects.Decode classifies it). Schema 2 is current.
// Schema 1, the previous shape, named the sales channel `channel` and had neither
// `pricingVersion` (read as 1) nor `expiresAtMs` (read as updatedAtMs + TTL); scripts never
// rewrite schemaVersion, so a v1 draft stays readable until it expires (the migration horizon
// is the quote TTL).
func (r *Store) mapQuote(f *repo.Fields, outcome repo.Outcome) *quotes.Quote {
	q := &quotes.Quote{
		ID: f.Str("quoteId"), Tenant: f.Str("tenantId"), CustomerID: f.Str("customerId"),
		Status: f.Str("status"), Currency: f.Str("currency"),
		SubtotalMinor: f.Int64("subtotalMinor"), DiscountMinor: f.Int64("discountMinor"),
		TaxMinor: f.Int64("taxMinor"), TotalMinor: f.Int64("totalMinor"),
		ItemCount: int(f.Int64("itemCount")), StateVersion: f.Int64("stateVersion"),
		SchemaVersion: int(f.OptInt64("schemaVersion")),
		CreatedAt:     repo.TimeFromMs(f.Int64("createdAtMs")), UpdatedAt: repo.TimeFromMs(f.Int64("updatedAtMs")),
		SubmittedAt: repo.TimeFromMs(f.OptInt64("submittedAtMs")),
	}
	if outcome == repo.OldSchema {
		q.SalesChannel = cmp.Or(f.Opt("salesChannel"), f.Opt("channel"))
		q.PricingVersion = max(f.OptInt64("pricingVersion"), 1)
		if exp := f.OptInt64("expiresAtMs"); exp > 0 {
			q.ExpiresAt = repo.TimeFromMs(exp)
		} else {
			q.ExpiresAt = q.UpdatedAt.Add(r.ttl)
		}
		if q.SalesChannel == "" {
			f.Flag("channel")
		}
	} else {
		q.SalesChannel = f.Str("salesChannel")
		q.PricingVersion = f.Int64("pricingVersion")
		q.ExpiresAt = repo.TimeFromMs(f.Int64("expiresAtMs"))
	}
	checkQuoteInvariants(f, q)
	return q
}

func checkQuoteInvariants(f *repo.Fields, q *quotes.Quote) {
	if q.Status != quotes.Draft && q.Status != quotes.Submitted && q.Status != "" {
		f.Flag("status")
	}
	for name, v := range map[string]int64{"subtotalMinor": q.SubtotalMinor, "discountMinor": q.DiscountMinor, "taxMinor": q.TaxMinor, "totalMinor": q.TotalMinor} {
		if v < 0 || v > quotes.MaxAmountMinor {
			f.Flag(name)
		}
	}
	if q.TotalMinor != q.SubtotalMinor-q.DiscountMinor+q.TaxMinor {
		f.Flag("totalMinor")
	}
	if q.StateVersion < 1 {
		f.Flag("stateVersion")
	}
}

// itemJSON is how one line item is stored in the items hash (field = item id). The scripts
// read quantity and unitPriceMinor from it to recompute the subtotal.
type itemJSON struct {
	SKU            string `json:"sku"`
	Quantity       int64  `json:"quantity"`
	UnitPriceMinor int64  `json:"unitPriceMinor"`
	Description    string `json:"description,omitempty"`
}

func decodeItems(raw map[string]string) ([]quotes.Item, error) {
	items := make([]quotes.Item, 0, len(raw))
	for id, v := range raw {
		var it itemJSON
		if err := json.Unmarshal([]byte(v), &it); err != nil || it.Quantity < 1 || it.UnitPriceMinor < 0 ||
			it.UnitPriceMinor > quotes.MaxAmountMinor || it.Quantity > quotes.MaxItemQuantity {
			return nil, fmt.Errorf("%w: quote item has malformed fields", repo.ErrCorrupt)
		}
		line := it.Quantity * it.UnitPriceMinor // both bounded: no overflow
		items = append(items, quotes.Item{ID: id, SKU: it.SKU, Quantity: it.Quantity, UnitPriceMinor: it.UnitPriceMinor,
			LineTotalMinor: line, Description: it.Description})
	}
	slices.SortFunc(items, func(a, b quotes.Item) int { return strings.Compare(a.ID, b.ID) })
	return items, nil
}
