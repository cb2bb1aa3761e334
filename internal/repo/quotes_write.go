package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
)

// Patch applies a merge patch at stateVersion ifMatch (compare-and-set inside the script,
// which bumps stateVersion and recomputes the total).
// The field rules are the service's (quotes.Service.Patch); the script refuses amounts above
// quotes.MaxAmountMinor and an empty patch changes nothing but the version.
func (r *Quotes) Patch(ctx context.Context, tenant, id string, ifMatch int64, p quotes.Patch) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote patch: %w", apperr.NotFound)
	}
	args := []string{tenant, FormatMs(ifMatch), FormatMs(r.ttl.Milliseconds()), FormatMs(quotes.MaxAmountMinor), "", "", "", "", id}
	if p.CustomerID != nil {
		args[4] = *p.CustomerID
	}
	if p.SalesChannel != nil {
		args[5] = *p.SalesChannel
	}
	for i, v := range []*int64{p.DiscountMinor, p.TaxMinor} {
		if v != nil {
			args[6+i] = FormatMs(*v)
		}
	}
	return r.write(ctx, scriptQuotePatch, "quote_patch", "patch", tenant, id, args)
}

// PutItem adds or replaces one line item at stateVersion ifMatch; the script recomputes
// subtotal and total from every line in the same step.
func (r *Quotes) PutItem(ctx context.Context, tenant, id string, ifMatch int64, it quotes.Item) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote item put: %w", apperr.NotFound)
	}
	raw, err := encodeItem(it)
	if err != nil {
		return nil, err
	}
	return r.write(ctx, scriptQuoteItem, "quote_item_write", "item_put", tenant, id,
		[]string{tenant, FormatMs(ifMatch), "put", it.ID, raw, FormatMs(it.Quantity), FormatMs(it.UnitPriceMinor),
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), FormatMs(r.ttl.Milliseconds()), FormatMs(quotes.MaxAmountMinor), id})
}

// DeleteItem removes one line item at stateVersion ifMatch and recomputes the totals.
func (r *Quotes) DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) || !itemIDPattern.MatchString(itemID) {
		return nil, fmt.Errorf("quote item delete: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptQuoteItem, "quote_item_write", "item_delete", tenant, id,
		[]string{tenant, FormatMs(ifMatch), "delete", itemID, "", "0", "0",
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), FormatMs(r.ttl.Milliseconds()), FormatMs(quotes.MaxAmountMinor), id})
}

// Submit moves the draft from DRAFT to SUBMITTED at stateVersion ifMatch.
func (r *Quotes) Submit(ctx context.Context, tenant, id string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote submit: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptQuoteSubmit, "quote_submit", "submit", tenant, id, []string{tenant, FormatMs(ifMatch), FormatMs(r.ttl.Milliseconds()), id})
}

// quoteWriteReplies are the replies of the quote write scripts (quote_patch, quote_item_write,
// quote_submit; each answers a subset).
var quoteWriteReplies = ReplyShapes{
	CodeOK: 1, CodeNotFound: 0, CodeItemNotFound: 0, CodeStale: 1, CodeInvalidStatus: 1,
	CodeBound: 1, CodeOverflow: 1, CodeDiscount: 0, CodeCorrupt: 1,
}

// write runs a quote write script on the draft's keys and reads its reply:
// {'OK', HGETALL summary} or a refusal (the script's header lists them).
func (r *Quotes) write(ctx context.Context, l *rueidis.Lua, name, transition, tenant, id string, args []string) (*quotes.Quote, error) {
	rep, err := r.run(ctx, name, "quote "+transition, l, tenant, id, args)
	if err != nil {
		return nil, err
	}
	r.m.Transition(ctx, "quote", transition, OutcomeOf(rep.Code()))
	arg, err := quoteWriteReplies.Read(rep)
	if err != nil {
		return nil, BadReply(ctx, r.m, name, err)
	}
	switch rep.Code() {
	case CodeOK:
		return r.decodeReply(ctx, name, rep, id)
	case CodeNotFound:
		return nil, fmt.Errorf("quote %s: %w", transition, rep.Err(""))
	case CodeItemNotFound:
		return nil, apperr.New(apperr.NotFound, "The quote has no such item.")
	case CodeStale:
		r.m.Event(ctx, "quote", "cas_conflict")
		return nil, StaleError(arg)
	case CodeInvalidStatus:
		return nil, apperr.Newf(apperr.InvalidStatus, "The quote is %s; only a DRAFT can change.", arg)
	case CodeBound:
		if arg == "items" {
			return nil, apperr.Newf(apperr.BoundExceeded, "A quote holds at most %d line items.", r.maxItems).With("maxItems", r.maxItems)
		}
		return nil, apperr.Newf(apperr.BoundExceeded, "A line item is at most %d bytes.", quotes.MaxItemBytes)
	case CodeOverflow:
		return nil, apperr.Newf(apperr.BoundExceeded, "%s would exceed %d minor units.", arg, quotes.MaxAmountMinor)
	case CodeDiscount:
		return nil, apperr.New(apperr.Unprocessable, "The discount would exceed the subtotal.")
	default: // CodeCorrupt, the one code left (read checked the code is the table's)
		return nil, CorruptError(ctx, r.m, r.log, name, "quote", "quote:{q_*}", arg)
	}
}

// encodeItem is the stored form of a line item, bounded as the item script bounds it. The
// item's rules are the service's (quotes.Service.PutItem).
func encodeItem(it quotes.Item) (string, error) {
	if !itemIDPattern.MatchString(it.ID) {
		return "", apperr.New(apperr.Validation, "itemId must be 1..64 of A-Z a-z 0-9 _ -")
	}
	b, err := json.Marshal(itemJSON{SKU: it.SKU, Quantity: it.Quantity, UnitPriceMinor: it.UnitPriceMinor, Description: it.Description})
	if err != nil {
		return "", fmt.Errorf("quote item encode: %w", err)
	}
	if len(b) > quotes.MaxItemBytes {
		return "", apperr.Newf(apperr.BoundExceeded, "A line item is at most %d bytes.", quotes.MaxItemBytes)
	}
	return string(b), nil
}
