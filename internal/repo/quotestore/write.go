package quotestore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
)

// Patch applies a merge patch at stateVersion ifMatch (compare-and-set inside the script,
// which bumps stateVersion and recomputes the total).
// The field rules are the service's (quotes.Service.Patch); the script refuses amounts above
// quotes.MaxAmountMinor and an empty patch changes nothing but the version.
func (r *Store) Patch(ctx context.Context, tenant, id string, ifMatch int64, p quotes.Patch) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote patch: %w", apperr.NotFound)
	}
	args := []string{tenant, repo.IfMatchArg(ifMatch), repo.FormatMs(r.ttl.Milliseconds()), repo.FormatMs(quotes.MaxAmountMinor), "", "", "", "", id, "", r.envelope(ctx, tenant)}
	if p.CustomerID != nil {
		args[4] = *p.CustomerID
	}
	if p.SalesChannel != nil {
		args[5] = *p.SalesChannel
	}
	args[9] = r.tags(args[4], "", args[5]) // a customer or channel changed moves the draft in its index
	for i, v := range []*int64{p.DiscountMinor, p.TaxMinor} {
		if v != nil {
			args[6+i] = repo.FormatMs(*v)
		}
	}
	return r.write(ctx, scriptPatch, "quote_patch", "patch", tenant, id, args)
}

// PutItem adds or replaces one line item at stateVersion ifMatch; the script recomputes
// subtotal and total from every line in the same step.
func (r *Store) PutItem(ctx context.Context, tenant, id string, ifMatch int64, it quotes.Item) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote item put: %w", apperr.NotFound)
	}
	raw, err := encodeItem(it)
	if err != nil {
		return nil, err
	}
	return r.write(ctx, scriptItem, "quote_item_write", "item_put", tenant, id,
		[]string{tenant, repo.IfMatchArg(ifMatch), "put", it.ID, raw, repo.FormatMs(it.Quantity), repo.FormatMs(it.UnitPriceMinor),
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), repo.FormatMs(r.ttl.Milliseconds()), repo.FormatMs(quotes.MaxAmountMinor), id, r.envelope(ctx, tenant)})
}

// DeleteItem removes one line item at stateVersion ifMatch and recomputes the totals.
func (r *Store) DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) || !itemIDPattern.MatchString(itemID) {
		return nil, fmt.Errorf("quote item delete: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptItem, "quote_item_write", "item_delete", tenant, id,
		[]string{tenant, repo.IfMatchArg(ifMatch), "delete", itemID, "", "0", "0",
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), repo.FormatMs(r.ttl.Milliseconds()), repo.FormatMs(quotes.MaxAmountMinor), id, r.envelope(ctx, tenant)})
}

// Submit moves the draft from DRAFT to SUBMITTED at stateVersion ifMatch.
func (r *Store) Submit(ctx context.Context, tenant, id string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote submit: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptSubmit, "quote_submit", "submit", tenant, id, []string{tenant, repo.IfMatchArg(ifMatch), repo.FormatMs(r.ttl.Milliseconds()), id, r.tags("", quotes.Submitted, ""), r.envelope(ctx, tenant)})
}

// writeReplies are the replies of the write scripts (quote_patch, quote_item_write,
// quote_submit; each answers a subset).
var writeReplies = repo.ReplyShapes{
	repo.CodeOK: 1, repo.CodeNotFound: 0, repo.CodeItemNotFound: 0, repo.CodeStale: 1, repo.CodeInvalidStatus: 1,
	repo.CodeBound: 1, repo.CodeOverflow: 1, repo.CodeDiscount: 0, repo.CodeCorrupt: 1,
}

// write runs a write script on the draft's keys: {'OK', HGETALL summary} or a refusal (the
// script's header lists them).
func (r *Store) write(ctx context.Context, l *rueidis.Lua, name, transition, tenant, id string, args []string) (*quotes.Quote, error) {
	ch := repo.Change{Script: name, Name: transition, Lua: l, Keys: r.quoteKeys(tenant, id), Args: args, Replies: writeReplies, ID: id}
	return r.objects.Transition(ctx, r.writes, ch, r.refusal)
}

// refusal words the refusals of a write that only a draft has.
func (r *Store) refusal(code repo.Code, arg string) error {
	switch code {
	case repo.CodeItemNotFound:
		return apperr.New(apperr.NotFound, "The quote has no such item.")
	case repo.CodeInvalidStatus:
		return apperr.Newf(apperr.InvalidStatus, "The quote is %s; only a DRAFT can change.", arg)
	case repo.CodeBound:
		if arg == "items" {
			return apperr.Newf(apperr.BoundExceeded, "A quote holds at most %d line items.", r.maxItems).With("maxItems", r.maxItems)
		}
		return apperr.Newf(apperr.BoundExceeded, "A line item is at most %d bytes.", quotes.MaxItemBytes)
	case repo.CodeOverflow:
		return apperr.Newf(apperr.BoundExceeded, "%s would exceed %d minor units.", arg, quotes.MaxAmountMinor)
	default: // repo.CodeDiscount, the one code left (writeReplies declares the codes)
		return apperr.New(apperr.Unprocessable, "The discount would exceed the subtotal.")
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
