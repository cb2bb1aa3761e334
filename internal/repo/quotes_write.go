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
	res := scriptQuotePatch.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)}, args)
	return r.written(ctx, "quote_patch", "patch", id, res)
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
	res := scriptQuoteItem.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)},
		[]string{tenant, ms(ifMatch), "put", it.ID, raw, ms(it.Quantity), ms(it.UnitPriceMinor),
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), ms(r.ttl.Milliseconds()), ms(quotes.MaxAmountMinor)})
	return r.written(ctx, "quote_item_write", "item_put", id, res)
}

// DeleteItem removes one line item at stateVersion ifMatch and recomputes the totals.
func (r *Quotes) DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) || !itemIDPattern.MatchString(itemID) {
		return nil, fmt.Errorf("quote item delete: %w", apperr.NotFound)
	}
	res := scriptQuoteItem.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)},
		[]string{tenant, ms(ifMatch), "delete", itemID, "", "0", "0",
			strconv.Itoa(r.maxItems), strconv.Itoa(quotes.MaxItemBytes), ms(r.ttl.Milliseconds()), ms(quotes.MaxAmountMinor)})
	return r.written(ctx, "quote_item_write", "item_delete", id, res)
}

// Submit moves the draft from DRAFT to SUBMITTED at stateVersion ifMatch.
func (r *Quotes) Submit(ctx context.Context, tenant, id string, ifMatch int64) (*quotes.Quote, error) {
	if !quoteIDPattern.MatchString(id) {
		return nil, fmt.Errorf("quote submit: %w", apperr.NotFound)
	}
	res := scriptQuoteSubmit.Exec(ctx, r.c, []string{r.summaryKey(id), r.itemsKey(id)},
		[]string{tenant, ms(ifMatch), ms(r.ttl.Milliseconds())})
	return r.written(ctx, "quote_submit", "submit", id, res)
}

// written interprets the reply of a quote write script: {'OK', summary} or a refusal code.
func (r *Quotes) written(ctx context.Context, scriptName, transition, id string, res rueidis.RedisResult) (*quotes.Quote, error) {
	code, rest, err := scriptReply(res)
	if err != nil {
		r.m.ScriptError(ctx, scriptName)
		return nil, redisErr("quote "+transition, err)
	}
	r.m.Transition(ctx, "quote", transition, outcomeOf(code))
	switch code {
	case "OK":
		return r.decodeReply(ctx, rest, id)
	case "NOT_FOUND":
		return nil, fmt.Errorf("quote %s: %w", transition, apperr.NotFound)
	case "ITEM_NOT_FOUND":
		return nil, apperr.New(apperr.NotFound, "The quote has no such item.")
	case "STALE":
		r.m.Event(ctx, "quote", "cas_conflict")
		return nil, staleError(rest)
	case "INVALID_STATUS":
		return nil, apperr.Newf(apperr.InvalidStatus, "The quote is %s; only a DRAFT can change.", argString(rest, 0))
	case "BOUND":
		if argString(rest, 0) == "items" {
			return nil, apperr.Newf(apperr.BoundExceeded, "A quote holds at most %d line items.", r.maxItems).With("maxItems", r.maxItems)
		}
		return nil, apperr.Newf(apperr.BoundExceeded, "A line item is at most %d bytes.", quotes.MaxItemBytes)
	case "OVERFLOW":
		return nil, apperr.Newf(apperr.BoundExceeded, "%s would exceed %d minor units.", argString(rest, 0), quotes.MaxAmountMinor)
	case "DISCOUNT":
		return nil, apperr.New(apperr.Unprocessable, "The discount would exceed the subtotal.")
	case "CORRUPT":
		r.m.Read(ctx, "quote", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "quote:{q_*}", "script", scriptName, "fields", []string{argString(rest, 0)})
		return nil, fmt.Errorf("%w: quote hash has malformed fields [%s]", ErrCorrupt, argString(rest, 0))
	}
	return nil, r.unexpected(ctx, scriptName, code)
}

func (r *Quotes) unexpected(ctx context.Context, scriptName, code string) error {
	r.m.ScriptError(ctx, scriptName)
	return fmt.Errorf("%s: unexpected reply %q", scriptName, code)
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

// decodeReply decodes the summary hash a script returned as its second element.
func (r *Quotes) decodeReply(ctx context.Context, rest []rueidis.RedisMessage, id string) (*quotes.Quote, error) {
	if len(rest) < 1 {
		return nil, r.unexpected(ctx, "quote", "short reply")
	}
	m, err := rest[0].AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("quote reply: %w", err)
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

// staleError is the 412 answer, carrying the current ETag so the caller can re-read.
func staleError(rest []rueidis.RedisMessage) error {
	e := apperr.New(apperr.PreconditionFailed, "The object changed since the If-Match ETag was read.")
	if cur, ok := argInt(rest, 0); ok {
		e = e.With("currentETag", strconv.Quote(strconv.FormatInt(cur, 10)))
	}
	return e
}

// createOutcome labels a create: a new object, or the one an idempotent retry planned.
func createOutcome(code string) string {
	if code == "EXISTS" {
		return "existing"
	}
	return "ok"
}

func outcomeOf(code string) string {
	switch code {
	case "OK":
		return "ok"
	case "STALE":
		return "stale"
	case "NOT_FOUND", "ITEM_NOT_FOUND":
		return "not_found"
	case "INVALID_STATUS":
		return "invalid_status"
	case "MAX_ESCALATION":
		return "max_escalation"
	case "BOUND", "OVERFLOW", "DISCOUNT":
		return "refused_bound"
	case "CORRUPT":
		return "corrupt"
	}
	return "error"
}
