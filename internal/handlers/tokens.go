package handlers

import (
	"context"
	"math"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TokenService is what the tokens operations call (implemented by *tokens.Service).
type TokenService interface {
	Issue(ctx context.Context, caller *auth.Principal, req tokens.IssueRequest) (tokens.Issued, error)
	Get(ctx context.Context, caller *auth.Principal, id string) (tokens.Token, error)
	List(ctx context.Context, caller *auth.Principal, cursor string, limit int) (tokens.Page, error)
	Revoke(ctx context.Context, caller *auth.Principal, id, reason string) (tokens.RevokeResult, error)
	Introspect(ctx context.Context, caller *auth.Principal, token string) (tokens.Introspection, error)
}

// IssueToken mints a token in the caller's tenant with a subset of the caller's scopes.
func (s *Server) IssueToken(ctx context.Context, request IssueTokenRequestObject) (IssueTokenResponseObject, error) {
	out, err := s.Tokens.Issue(ctx, caller(ctx), issueRequest(*request.Body))
	if err != nil {
		return nil, err
	}
	loc := "/v1/tokens/" + out.TokenID
	body := TokenIssued{TokenId: out.TokenID, Token: out.Token, ExpiresAt: ts(out.ExpiresAt),
		Scopes: make([]Scope, len(out.Scopes)), TokenType: TokenIssuedTokenType(out.TokenType)}
	for i, sc := range out.Scopes {
		body.Scopes[i] = Scope(sc)
	}
	return IssueToken201JSONResponse{Body: body, Headers: IssueToken201ResponseHeaders{CacheControl: &noStore, Location: &loc}}, nil
}

func issueRequest(b TokenIssueRequest) tokens.IssueRequest {
	req := tokens.IssueRequest{Subject: b.Subject, Scopes: make([]string, len(b.Scopes)), TTL: -1, TokenType: string(b.TokenType),
		Description: deref(b.Description)}
	if b.TtlSeconds > 0 && int64(b.TtlSeconds) <= int64(math.MaxInt64/time.Second) {
		req.TTL = time.Duration(b.TtlSeconds) * time.Second // out of range → -1, refused by the service
	}
	for i, sc := range b.Scopes {
		req.Scopes[i] = string(sc)
	}
	return req
}

// ListTokens pages through the caller's tenant's tokens, newest first.
func (s *Server) ListTokens(ctx context.Context, request ListTokensRequestObject) (ListTokensResponseObject, error) {
	page, err := s.Tokens.List(ctx, caller(ctx), deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	out := TokenPage{Items: views(page.Items, tokenMeta), NextCursor: stringOrNil(page.NextCursor)}
	return ListTokens200JSONResponse{Body: out, Headers: ListTokens200ResponseHeaders{Link: nextLink(ctx, page.NextCursor)}}, nil
}

// GetToken returns a token's metadata (never the token).
func (s *Server) GetToken(ctx context.Context, request GetTokenRequestObject) (GetTokenResponseObject, error) {
	t, err := s.Tokens.Get(ctx, caller(ctx), request.TokenId)
	if err != nil {
		return nil, err
	}
	return GetToken200JSONResponse{Body: tokenMeta(t)}, nil
}

// RevokeToken revokes a token: 204 whether it was live, already revoked or unknown.
func (s *Server) RevokeToken(ctx context.Context, request RevokeTokenRequestObject) (RevokeTokenResponseObject, error) {
	if _, err := s.Tokens.Revoke(ctx, caller(ctx), request.TokenId, deref(request.Params.Reason)); err != nil {
		return nil, err
	}
	return RevokeToken204Response{}, nil
}

// IntrospectToken answers RFC 7662 introspection from a JSON or form body.
func (s *Server) IntrospectToken(ctx context.Context, request IntrospectTokenRequestObject) (IntrospectTokenResponseObject, error) {
	body := request.JSONBody
	if body == nil {
		body = request.FormdataBody
	}
	if body == nil {
		return nil, apperr.New(apperr.Validation, "Send {token} as JSON or as a form.")
	}
	in, err := s.Tokens.Introspect(ctx, caller(ctx), body.Token)
	if err != nil {
		return nil, err
	}
	return IntrospectToken200JSONResponse{Body: introspection(in), Headers: IntrospectToken200ResponseHeaders{CacheControl: &noStore}}, nil
}

func tokenMeta(t tokens.Token) TokenMeta {
	m := TokenMeta{TokenId: t.ID, TenantId: t.Tenant, Subject: t.Subject, TokenType: t.Type, Scopes: t.Scopes,
		IssuedAt: ts(t.IssuedAt), ExpiresAt: ts(t.ExpiresAt), Revoked: t.Revoked,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt)}
	if m.Scopes == nil {
		m.Scopes = []string{}
	}
	if t.Description != "" {
		m.Description = &t.Description
	}
	if t.Revoked {
		m.RevokedAt, m.RevokedReason = &Timestamp{t.RevokedAt}, &t.RevokedReason
	}
	if t.ParentID != "" {
		m.ParentId = &t.ParentID
	}
	return m
}

func introspection(in tokens.Introspection) Introspection {
	if !in.Active {
		return Introspection{Active: false}
	}
	return Introspection{Active: true, Scope: &in.Scope, Sub: &in.Subject, Jti: &in.TokenID, TokenType: &in.TokenType,
		TenantId: &in.Tenant, Iss: &in.Issuer, Exp: &in.ExpiresAt, Iat: &in.IssuedAt, Act: actor(in.Act)}
}

// actor is the RFC 8693 act claim as the spec's Actor (nil for a root token).
func actor(a *auth.Actor) *Actor {
	if a == nil {
		return nil
	}
	return &Actor{Sub: a.Subject, Act: actor(a.Act)}
}
