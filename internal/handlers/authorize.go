package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// Authorize answers 501 until the forward-auth issue lands.
func (s *Server) Authorize(ctx context.Context, request AuthorizeRequestObject) (AuthorizeResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "Authorize is not built yet.")
}
