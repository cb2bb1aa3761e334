package quotes

import (
	"regexp"
	"unicode/utf8"

	"github.com/hashgate/hashgate/internal/apperr"
)

var (
	idPattern      = regexp.MustCompile(`^q_[0-9a-hjkmnp-tv-z]{26}$`)
	itemIDPattern  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	skuPattern     = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,64}$`)
	refPattern     = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	channelPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)
)

// ValidID reports whether id has the shape of a quote id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

func validateNew(in NewQuote) error {
	switch {
	case !idPattern.MatchString(in.ID):
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

func validatePatch(p Patch) error {
	if p.CustomerID != nil && !refPattern.MatchString(*p.CustomerID) {
		return apperr.New(apperr.Validation, "customerId must be 1..64 of A-Z a-z 0-9 . _ : -")
	}
	if p.SalesChannel != nil && !channelPattern.MatchString(*p.SalesChannel) {
		return apperr.New(apperr.Validation, "salesChannel must be 1..32 of A-Z a-z 0-9 . _ -")
	}
	for i, v := range []*int64{p.DiscountMinor, p.TaxMinor} {
		if v == nil {
			continue
		}
		if err := checkAmount([]string{"discountMinor", "taxMinor"}[i], *v); err != nil {
			return err
		}
	}
	if p.CustomerID == nil && p.SalesChannel == nil && p.DiscountMinor == nil && p.TaxMinor == nil {
		return apperr.New(apperr.Validation, "The patch changes nothing.")
	}
	return nil
}

func validateItem(it Item) error {
	switch {
	case !itemIDPattern.MatchString(it.ID):
		return apperr.New(apperr.Validation, "itemId must be 1..64 of A-Z a-z 0-9 _ -")
	case !skuPattern.MatchString(it.SKU):
		return apperr.New(apperr.Validation, "sku must be 1..64 of A-Z a-z 0-9 . _ : / -")
	case it.Quantity < 1 || it.Quantity > MaxItemQuantity:
		return apperr.Newf(apperr.Validation, "quantity must be within 1..%d.", MaxItemQuantity)
	case it.UnitPriceMinor < 0:
		return apperr.New(apperr.Validation, "unitPriceMinor must not be negative.")
	case !utf8.ValidString(it.Description) || utf8.RuneCountInString(it.Description) > 256:
		return apperr.New(apperr.Validation, "description must be valid UTF-8 of at most 256 characters.")
	}
	return checkAmount("unitPriceMinor", it.UnitPriceMinor)
}

func checkAmount(name string, v int64) error {
	if v < 0 {
		return apperr.Newf(apperr.Validation, "%s must not be negative.", name)
	}
	if v > MaxAmountMinor {
		return apperr.Newf(apperr.BoundExceeded, "%s must be at most %d minor units.", name, MaxAmountMinor)
	}
	return nil
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
