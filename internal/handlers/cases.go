package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/apperr"
)

// CaseService is what the cases operations call. (Filled in when the cases issue lands.)
type CaseService interface{}

// CreateCase answers 501 until the cases issue lands.
func (s *Server) CreateCase(ctx context.Context, request CreateCaseRequestObject) (CreateCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "CreateCase is not built yet.")
}

// GetCase answers 501 until the cases issue lands.
func (s *Server) GetCase(ctx context.Context, request GetCaseRequestObject) (GetCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetCase is not built yet.")
}

// EscalateCase answers 501 until the cases issue lands.
func (s *Server) EscalateCase(ctx context.Context, request EscalateCaseRequestObject) (EscalateCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "EscalateCase is not built yet.")
}

// AssignCase answers 501 until the cases issue lands.
func (s *Server) AssignCase(ctx context.Context, request AssignCaseRequestObject) (AssignCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "AssignCase is not built yet.")
}

// ResolveCase answers 501 until the cases issue lands.
func (s *Server) ResolveCase(ctx context.Context, request ResolveCaseRequestObject) (ResolveCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ResolveCase is not built yet.")
}

// ReopenCase answers 501 until the cases issue lands.
func (s *Server) ReopenCase(ctx context.Context, request ReopenCaseRequestObject) (ReopenCaseResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "ReopenCase is not built yet.")
}

// GetCaseHistory answers 501 until the cases issue lands.
func (s *Server) GetCaseHistory(ctx context.Context, request GetCaseHistoryRequestObject) (GetCaseHistoryResponseObject, error) {
	return nil, apperr.New(apperr.NotImplemented, "GetCaseHistory is not built yet.")
}
