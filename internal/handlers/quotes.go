package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/quotes"
)

// QuoteService is what the quotes operations call (*quotes.Service implements it).
type QuoteService interface {
	Create(ctx context.Context, in quotes.NewQuote, key idempotency.Key,
		render func(*quotes.Quote) (idempotency.Response, error)) (idempotency.Result, error)
	Get(ctx context.Context, tenant, id string) (*quotes.Quote, error)
	Items(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[quotes.Item], *quotes.Quote, error)
	Patch(ctx context.Context, tenant, id string, ifMatch int64, p quotes.Patch) (*quotes.Quote, error)
	PutItem(ctx context.Context, tenant, id string, ifMatch int64, it quotes.Item) (*quotes.Quote, error)
	DeleteItem(ctx context.Context, tenant, id, itemID string, ifMatch int64) (*quotes.Quote, error)
	Submit(ctx context.Context, tenant, id string, ifMatch int64) (*quotes.Quote, error)
	Delete(ctx context.Context, tenant, id string) error
	List(ctx context.Context, q quotes.ListQuery) (quotes.Page, error)
}

var _ QuoteService = (*quotes.Service)(nil)

// quoteVersion is the version a write to a draft requires (If-Match: * is quotes.AnyVersion).
func quoteVersion(ifMatch IfMatch) (int64, error) {
	h := string(ifMatch)
	return ifMatchOrAny(&h, quotes.AnyVersion)
}

// CreateQuote opens a draft; with an Idempotency-Key a retry replays the first 201.
func (s *Server) CreateQuote(ctx context.Context, request CreateQuoteRequestObject) (CreateQuoteResponseObject, error) {
	b := request.Body
	in := quotes.NewQuote{Tenant: caller(ctx).Tenant, CustomerID: b.CustomerId, SalesChannel: b.SalesChannel, Currency: b.Currency}
	out, err := s.Quotes.Create(ctx, in, idempotency.Key{Value: request.Params.IdempotencyKey, Request: b},
		func(q *quotes.Quote) (idempotency.Response, error) {
			return createdJSON("/v1/quotes/"+q.ID, q.StateVersion, quoteView(q))
		})
	if err != nil {
		return nil, err
	}
	return createdResponse(out), nil
}

// ListQuotes pages through the tenant's drafts, filtered, newest change first.
func (s *Server) ListQuotes(ctx context.Context, request ListQuotesRequestObject) (ListQuotesResponseObject, error) {
	in := request.Params
	q := quotes.ListQuery{Tenant: caller(ctx).Tenant, CustomerID: deref(in.CustomerId), SalesChannel: deref(in.SalesChannel),
		Cursor: deref(in.Cursor), Limit: pageSize(request.Params.Limit)}
	if in.Status != nil {
		for _, st := range *in.Status {
			q.Statuses = append(q.Statuses, string(st))
		}
	}
	if in.UpdatedSince != nil {
		q.UpdatedSince = in.UpdatedSince.Time
	}
	page, err := s.Quotes.List(ctx, q)
	if err != nil {
		return nil, err
	}
	out := QuotePage{Items: views(page.Items, func(q quotes.Quote) Quote { return quoteView(&q) }), NextCursor: stringOrNil(page.NextCursor)}
	return ListQuotes200JSONResponse{Body: out, Headers: ListQuotes200ResponseHeaders{Link: nextLink(ctx, page.NextCursor)}}, nil
}

// GetQuote returns the draft with its ETag.
func (s *Server) GetQuote(ctx context.Context, request GetQuoteRequestObject) (GetQuoteResponseObject, error) {
	q, err := s.Quotes.Get(ctx, caller(ctx).Tenant, request.QuoteId)
	if err != nil {
		return nil, err
	}
	return GetQuote200JSONResponse{Body: quoteView(q), Headers: GetQuote200ResponseHeaders{ETag: etagOf(q.StateVersion)}}, nil
}

// PatchQuote merge-patches the draft at the If-Match version.
func (s *Server) PatchQuote(ctx context.Context, request PatchQuoteRequestObject) (PatchQuoteResponseObject, error) {
	v, err := quoteVersion(request.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	b := request.Body
	q, err := s.Quotes.Patch(ctx, caller(ctx).Tenant, request.QuoteId, v,
		quotes.Patch{CustomerID: b.CustomerId, SalesChannel: b.SalesChannel, DiscountMinor: b.DiscountMinor, TaxMinor: b.TaxMinor})
	if err != nil {
		return nil, err
	}
	return PatchQuote200JSONResponse{Body: quoteView(q), Headers: PatchQuote200ResponseHeaders{ETag: etagOf(q.StateVersion)}}, nil
}

// DeleteQuote removes the draft and its items (idempotent).
func (s *Server) DeleteQuote(ctx context.Context, request DeleteQuoteRequestObject) (DeleteQuoteResponseObject, error) {
	return DeleteQuote204Response{}, s.Quotes.Delete(ctx, caller(ctx).Tenant, request.QuoteId)
}

// ListQuoteItems returns the line items, ordered by item id, with the draft's ETag.
func (s *Server) ListQuoteItems(ctx context.Context, request ListQuoteItemsRequestObject) (ListQuoteItemsResponseObject, error) {
	items, q, err := s.Quotes.Items(ctx, caller(ctx).Tenant, request.QuoteId, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	return ListQuoteItems200JSONResponse{Body: QuoteItemList{Items: views(items.Items, quoteItemView), StateVersion: q.StateVersion, NextCursor: stringOrNil(items.NextCursor)},
		Headers: ListQuoteItems200ResponseHeaders{ETag: etagOf(q.StateVersion), Link: nextLink(ctx, items.NextCursor)}}, nil
}

// PutQuoteItem adds or replaces a line item at the If-Match version; totals are recomputed.
func (s *Server) PutQuoteItem(ctx context.Context, request PutQuoteItemRequestObject) (PutQuoteItemResponseObject, error) {
	v, err := quoteVersion(request.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	b := request.Body
	it := quotes.Item{ID: request.ItemId, SKU: b.Sku, Quantity: b.Quantity, UnitPriceMinor: b.UnitPriceMinor, Description: deref(b.Description)}
	q, err := s.Quotes.PutItem(ctx, caller(ctx).Tenant, request.QuoteId, v, it)
	if err != nil {
		return nil, err
	}
	return PutQuoteItem200JSONResponse{Body: quoteView(q), Headers: PutQuoteItem200ResponseHeaders{ETag: etagOf(q.StateVersion)}}, nil
}

// DeleteQuoteItem removes a line item at the If-Match version; totals are recomputed.
func (s *Server) DeleteQuoteItem(ctx context.Context, request DeleteQuoteItemRequestObject) (DeleteQuoteItemResponseObject, error) {
	v, err := quoteVersion(request.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	q, err := s.Quotes.DeleteItem(ctx, caller(ctx).Tenant, request.QuoteId, request.ItemId, v)
	if err != nil {
		return nil, err
	}
	return DeleteQuoteItem200JSONResponse{Body: quoteView(q), Headers: DeleteQuoteItem200ResponseHeaders{ETag: etagOf(q.StateVersion)}}, nil
}

// SubmitQuote moves the draft from DRAFT to SUBMITTED at the If-Match version.
func (s *Server) SubmitQuote(ctx context.Context, request SubmitQuoteRequestObject) (SubmitQuoteResponseObject, error) {
	v, err := quoteVersion(request.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	q, err := s.Quotes.Submit(ctx, caller(ctx).Tenant, request.QuoteId, v)
	if err != nil {
		return nil, err
	}
	return SubmitQuote200JSONResponse{Body: quoteView(q), Headers: SubmitQuote200ResponseHeaders{ETag: etagOf(q.StateVersion)}}, nil
}

func quoteView(q *quotes.Quote) Quote {
	return Quote{
		QuoteId: q.ID, TenantId: q.Tenant, CustomerId: q.CustomerID, SalesChannel: q.SalesChannel,
		Status: QuoteStatus(q.Status), Currency: q.Currency,
		SubtotalMinor: q.SubtotalMinor, DiscountMinor: q.DiscountMinor, TaxMinor: q.TaxMinor, TotalMinor: q.TotalMinor,
		ItemCount: q.ItemCount, PricingVersion: q.PricingVersion, StateVersion: q.StateVersion,
		CreatedAt: ts(q.CreatedAt), UpdatedAt: ts(q.UpdatedAt), ExpiresAt: ts(q.ExpiresAt), SubmittedAt: tsOrNil(q.SubmittedAt),
	}
}

func quoteItemView(it quotes.Item) QuoteItem {
	return QuoteItem{ItemId: it.ID, Sku: it.SKU, Quantity: it.Quantity, UnitPriceMinor: it.UnitPriceMinor,
		LineTotalMinor: it.LineTotalMinor, Description: stringOrNil(it.Description)}
}
