package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

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
	args := []string{tenant, ms(ifMatch), ms(r.ttl.Milliseconds()), ms(quotes.MaxAmountMinor), "", "", "", ""}
	if p.CustomerID != nil {
		args[4] = *p.CustomerID
	}
	if p.SalesChannel != nil {
		args[5] = *p.SalesChannel
	}
	for i, v := range []*int64{p.DiscountMinor, p.TaxMinor} {
		if v != nil {
			args[6+i] = ms(*v)
		}
	}
	return r.write(ctx, scriptQuotePatch, "quote_patch", "patch", id, args)
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
	return r.write(ctx, scriptQuoteItem, "quote_item_write", "item_put", id,
		[]string{tenant, ms(ifMatch), "put", it.ID, raw, ms(it.Quantity), ms(it.UnitPriceMinor),
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), ms(r.ttl.Milliseconds()), ms(quotes.MaxAmountMinor)})
}

// DeleteItem removes one line item at stateVersion ifMatch and recomputes the totals.
func (r *Quotes) DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) || !itemIDPattern.MatchString(itemID) {
		return nil, fmt.Errorf("quote item delete: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptQuoteItem, "quote_item_write", "item_delete", id,
		[]string{tenant, ms(ifMatch), "delete", itemID, "", "0", "0",
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), ms(r.ttl.Milliseconds()), ms(quotes.MaxAmountMinor)})
}

// Submit moves the draft from DRAFT to SUBMITTED at stateVersion ifMatch.
func (r *Quotes) Submit(ctx context.Context, tenant, id string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote submit: %w", apperr.NotFound)
	}
	return r.write(ctx, scriptQuoteSubmit, "quote_submit", "submit", id, []string{tenant, ms(ifMatch), ms(r.ttl.Milliseconds())})
}

// quoteWriteReplies are the replies of the quote write scripts (quote_patch, quote_item_write,
// quote_submit; each answers a subset).
var quoteWriteReplies = replyShapes{
	CodeOK: 1, CodeNotFound: 0, CodeItemNotFound: 0, CodeStale: 1, CodeInvalidStatus: 1,
	CodeBound: 1, CodeOverflow: 1, CodeDiscount: 0, CodeCorrupt: 1,
}

// write runs a quote write script on the quote's two keys and reads its reply:
// {'OK', HGETALL summary} or a refusal (the script's header lists them).
func (r *Quotes) write(ctx context.Context, l *rueidis.Lua, name, transition, id string, args []string) (*quotes.Quote, error) {
	rep, err := runScript(ctx, r.c, r.m, name, "quote "+transition, l, []string{r.summaryKey(id), r.itemsKey(id)}, args)
	if err != nil {
		return nil, err
	}
	r.m.Transition(ctx, "quote", transition, outcomeOf(rep.Code()))
	arg, err := quoteWriteReplies.read(rep)
	if err != nil {
		return nil, badReply(ctx, r.m, name, err)
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
		return nil, staleError(arg)
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
		return nil, corruptError(ctx, r.m, r.log, name, "quote", "quote:{q_*}", arg)
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

// decodeReply decodes the summary hash a script answered as the first value of its payload.
func (r *Quotes) decodeReply(ctx context.Context, name string, rep Reply, id string) (*quotes.Quote, error) {
	m, err := rep.StrMap(0)
	if err != nil {
		return nil, badReply(ctx, r.m, name, err)
	}
	return r.decode(ctx, m, id)
}

// decode classifies and maps a summary hash. Schema 2 is current. Schema 1, the previous
// shape, named the sales channel `channel` and had neither `pricingVersion` (read as 1) nor
// `expiresAtMs` (read as updatedAtMs + TTL); scripts never rewrite schemaVersion, so a v1
// draft stays readable until it expires (the migration horizon is the quote TTL).
func (r *Quotes) decode(ctx context.Context, m map[string]string, id string) (*quotes.Quote, error) {
	if len(m) == 0 {
		r.m.Read(ctx, "quote", Missing)
		return nil, fmt.Errorf("quote %s: %w", id, apperr.NotFound)
	}
	r.m.Payload(ctx, "quote", payloadBytes(m))
	f := newFields(m)
	outcome := f.schema()
	q := &quotes.Quote{
		ID: f.str("quoteId"), Tenant: f.str("tenantId"), CustomerID: f.str("customerId"),
		Status: f.str("status"), Currency: f.str("currency"),
		SubtotalMinor: f.int64("subtotalMinor"), DiscountMinor: f.int64("discountMinor"),
		TaxMinor: f.int64("taxMinor"), TotalMinor: f.int64("totalMinor"),
		ItemCount: int(f.int64("itemCount")), StateVersion: f.int64("stateVersion"),
		SchemaVersion: int(f.optInt64("schemaVersion")),
		CreatedAt:     msTime(f.int64("createdAtMs")), UpdatedAt: msTime(f.int64("updatedAtMs")),
		SubmittedAt: msTime(f.optInt64("submittedAtMs")),
	}
	if outcome == OldSchema {
		q.SalesChannel = firstNonEmpty(f.opt("salesChannel"), f.opt("channel"))
		q.PricingVersion = max(f.optInt64("pricingVersion"), 1)
		if exp := f.optInt64("expiresAtMs"); exp > 0 {
			q.ExpiresAt = msTime(exp)
		} else {
			q.ExpiresAt = q.UpdatedAt.Add(r.ttl)
		}
		if q.SalesChannel == "" {
			f.bad = append(f.bad, "channel")
		}
	} else {
		q.SalesChannel = f.str("salesChannel")
		q.PricingVersion = f.int64("pricingVersion")
		q.ExpiresAt = msTime(f.int64("expiresAtMs"))
	}
	checkQuoteInvariants(f, q)
	if err := f.err("quote"); err != nil {
		r.m.Read(ctx, "quote", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "quote:{q_*}", "fields", f.bad)
		return nil, err
	}
	r.m.Read(ctx, "quote", outcome)
	return q, nil
}

func checkQuoteInvariants(f *fields, q *quotes.Quote) {
	if q.Status != quotes.Draft && q.Status != quotes.Submitted && q.Status != "" {
		f.bad = append(f.bad, "status")
	}
	for name, v := range map[string]int64{"subtotalMinor": q.SubtotalMinor, "discountMinor": q.DiscountMinor, "taxMinor": q.TaxMinor, "totalMinor": q.TotalMinor} {
		if v < 0 || v > quotes.MaxAmountMinor {
			f.bad = append(f.bad, name)
		}
	}
	if q.TotalMinor != q.SubtotalMinor-q.DiscountMinor+q.TaxMinor {
		f.bad = append(f.bad, "totalMinor")
	}
	if q.StateVersion < 1 {
		f.bad = append(f.bad, "stateVersion")
	}
}

func msTime(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func payloadBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
