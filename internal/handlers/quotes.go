package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// QuoteService is what the quotes operations call. (Filled in when the quotes issue lands.)
type QuoteService interface{}

// CreateQuote answers 501 until the quotes issue lands.
func (s *Server) CreateQuote(ctx context.Context, request CreateQuoteRequestObject) (CreateQuoteResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "CreateQuote is not built yet.")
}

// GetQuote answers 501 until the quotes issue lands.
func (s *Server) GetQuote(ctx context.Context, request GetQuoteRequestObject) (GetQuoteResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetQuote is not built yet.")
}

// PatchQuote answers 501 until the quotes issue lands.
func (s *Server) PatchQuote(ctx context.Context, request PatchQuoteRequestObject) (PatchQuoteResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "PatchQuote is not built yet.")
}

// DeleteQuote answers 501 until the quotes issue lands.
func (s *Server) DeleteQuote(ctx context.Context, request DeleteQuoteRequestObject) (DeleteQuoteResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "DeleteQuote is not built yet.")
}

// ListQuoteItems answers 501 until the quotes issue lands.
func (s *Server) ListQuoteItems(ctx context.Context, request ListQuoteItemsRequestObject) (ListQuoteItemsResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ListQuoteItems is not built yet.")
}

// PutQuoteItem answers 501 until the quotes issue lands.
func (s *Server) PutQuoteItem(ctx context.Context, request PutQuoteItemRequestObject) (PutQuoteItemResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "PutQuoteItem is not built yet.")
}

// DeleteQuoteItem answers 501 until the quotes issue lands.
func (s *Server) DeleteQuoteItem(ctx context.Context, request DeleteQuoteItemRequestObject) (DeleteQuoteItemResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "DeleteQuoteItem is not built yet.")
}

// SubmitQuote answers 501 until the quotes issue lands.
func (s *Server) SubmitQuote(ctx context.Context, request SubmitQuoteRequestObject) (SubmitQuoteResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "SubmitQuote is not built yet.")
}
