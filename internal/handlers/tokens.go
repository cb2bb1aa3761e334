package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// TokenService is what the tokens operations call. (Filled in when the tokens issue lands.)
type TokenService interface{}

// IssueToken answers 501 until the tokens issue lands.
func (s *Server) IssueToken(ctx context.Context, request IssueTokenRequestObject) (IssueTokenResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "IssueToken is not built yet.")
}

// ListTokens answers 501 until the tokens issue lands.
func (s *Server) ListTokens(ctx context.Context, request ListTokensRequestObject) (ListTokensResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ListTokens is not built yet.")
}

// GetToken answers 501 until the tokens issue lands.
func (s *Server) GetToken(ctx context.Context, request GetTokenRequestObject) (GetTokenResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetToken is not built yet.")
}

// RevokeToken answers 501 until the tokens issue lands.
func (s *Server) RevokeToken(ctx context.Context, request RevokeTokenRequestObject) (RevokeTokenResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "RevokeToken is not built yet.")
}

// IntrospectToken answers 501 until the tokens issue lands.
func (s *Server) IntrospectToken(ctx context.Context, request IntrospectTokenRequestObject) (IntrospectTokenResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "IntrospectToken is not built yet.")
}
