// Package tokens is the API-token service: it issues Ed25519 JWTs whose jti is the token id,
// keeps each token's metadata in a Store (store.go; internal/repo/tokenstore keeps it in
// Redis), revokes, lists and introspects them, and implements auth.Checker, the per-request
// check that a verified token is still live.
//
// The check reads four fields of the token's record (Store.State) through the store's
// client-side cache, so a hot token costs no Redis round trip; a revocation reaches every
// gateway replica through Redis's invalidation push, and the cache TTL bounds staleness should
// a push be lost. It fails closed: with Redis unreachable and nothing cached, the check
// returns an error wrapping storeerr.ErrUnavailable (503), never a pass.
//
// The token string is shown once by Issue/Mint and never stored, logged or put on a span;
// spans carry the token id.
package tokens

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/recent"
)

// Bounds of a token request.
const (
	// MinTTL is the shortest token life.
	MinTTL = time.Minute
	// MaxCacheTTL caps the check's client-side cache TTL whatever the configuration says.
	MaxCacheTTL = 5 * time.Minute
	// DefaultCacheTTL is the configuration's default check cache TTL.
	DefaultCacheTTL = 5 * time.Second
	// DefaultListLimit and MaxListLimit bound a page.
	DefaultListLimit = 50
	MaxListLimit     = 100
	maxDescRunes     = 256
	maxReasonBytes   = 128
	maxTenantBytes   = 128
)

// Token types.
const (
	TypeService = "service"
	TypeUser    = "user"
)

// ErrConfig reports a bad New option.
var ErrConfig = errors.New("tokens: bad configuration")

// Options configure New. Values come from the gateway's config (TokenMaxTTL, TokenCacheTTL).
type Options struct {
	// MaxTTL bounds a token's life (required, ≥ MinTTL).
	MaxTTL time.Duration
	// CacheTTL is the check's client-side cache TTL, capped at MaxCacheTTL; 0 reads Redis on
	// every request.
	CacheTTL time.Duration
	Meter    metric.Meter
	Tracer   trace.Tracer
	Logger   *slog.Logger
	// Now is the clock (default time.Now); it must match the Authority's.
	Now func() time.Time
	// RecentWritesMax bounds the marks of tokens this gateway revoked (0: recent.DefaultMax).
	RecentWritesMax int
}

// Service issues, revokes, reads and checks API tokens. It is safe for concurrent use.
type Service struct {
	auth     *auth.Authority
	store    Store
	maxTTL   time.Duration
	cacheTTL time.Duration
	// revoked marks tokens this gateway revoked, for one cache TTL (nil with the cache off).
	revoked *recent.Writes
	tracer  trace.Tracer
	log     *slog.Logger
	now     func() time.Time
	m       *instruments
}

var _ auth.Checker = (*Service)(nil)

// New returns the service. a signs and verifies; store keeps the metadata.
func New(a *auth.Authority, store Store, o Options) (*Service, error) {
	switch {
	case a == nil:
		return nil, fmt.Errorf("%w: no authority", ErrConfig)
	case store == nil:
		return nil, fmt.Errorf("%w: no store", ErrConfig)
	case o.MaxTTL < MinTTL:
		return nil, fmt.Errorf("%w: max TTL must be at least %s", ErrConfig, MinTTL)
	case o.CacheTTL < 0:
		return nil, fmt.Errorf("%w: negative cache TTL", ErrConfig)
	}
	if o.Meter == nil {
		o.Meter = noop.NewMeterProvider().Meter("tokens")
	}
	if o.Tracer == nil {
		o.Tracer = tracenoop.NewTracerProvider().Tracer("tokens")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := newInstruments(o.Meter)
	if err != nil {
		return nil, err
	}
	s := &Service{auth: a, store: store, maxTTL: o.MaxTTL, cacheTTL: min(o.CacheTTL, MaxCacheTTL),
		tracer: o.Tracer, log: o.Logger, now: o.Now, m: m}
	if s.cacheTTL > 0 {
		s.revoked = recent.New(s.cacheTTL, o.RecentWritesMax)
	}
	return s, nil
}

// IssueRequest is a token request on the HTTP path: the tenant is always the caller's.
type IssueRequest struct {
	Subject     string
	Scopes      []string
	TTL         time.Duration
	TokenType   string
	Description string
}

// MintRequest is a token request without a caller (bootstrap token, `gateway token mint`).
type MintRequest struct {
	Tenant      string
	Subject     string
	Scopes      []string
	TTL         time.Duration
	TokenType   string
	Description string
}

// Issued is a new token: Token is shown once and never stored.
type Issued struct {
	TokenID   string
	Token     string
	ExpiresAt time.Time
	Scopes    []string
	TokenType string
}

// Issue mints a token for caller's tenant. The caller can grant only scopes it holds (a root
// token, holding tokens:admin, any custom scope: auth.CustomScope), never
// tokens:admin. A token minted with a bearer token's credentials is that token's child: its
// expiry is capped at the issuer's (the answer's ExpiresAt says so), it cannot be minted once
// the issuer is revoked, revoking the issuer revokes it, and its JWT names the issuer's
// subject in an RFC 8693 act claim (the issuer's own act nested in it).
func (s *Service) Issue(ctx context.Context, caller *auth.Principal, req IssueRequest) (Issued, error) {
	if caller == nil || caller.Tenant == "" {
		return Issued{}, apperr.New(apperr.Unauthenticated, "Issuing a token needs an authenticated caller.")
	}
	if err := validScopes(req.Scopes); err != nil {
		return Issued{}, err
	}
	for i, sc := range req.Scopes {
		if sc == auth.ScopeTokensAdmin {
			return Issued{}, &apperr.Error{Kind: apperr.Validation, Detail: "The tokens:admin scope cannot be minted through POST /v1/tokens: only root tokens hold it (the bootstrap token and tokens from `gateway token mint`). Leave it out: a token you mint can still revoke and see itself and the tokens minted below it.",
				Fields: []apperr.FieldError{{Pointer: fmt.Sprintf("/scopes/%d", i), Detail: "tokens:admin is held by root tokens only"}}}
		}
		if !caller.HasScope(sc) && !(auth.CustomScope(sc) && caller.HasScope(auth.ScopeTokensAdmin)) {
			return Issued{}, apperr.Newf(apperr.InsufficientScope, "You cannot grant the %s scope: your credentials do not hold it.", sc)
		}
	}
	act := &auth.Actor{Subject: caller.Subject, Act: caller.Act}
	return s.mint(ctx, MintRequest{Tenant: caller.Tenant, Subject: req.Subject, Scopes: req.Scopes,
		TTL: req.TTL, TokenType: req.TokenType, Description: req.Description}, caller.TokenID, caller.ExpiresAt, act)
}

var subjectPattern = regexp.MustCompile(`^[A-Za-z0-9._@:+-]{1,128}$`)

// Mint mints a token and writes its metadata, without a caller-scope check: for the bootstrap
// admin token and `gateway token mint`. Every other bound is enforced. Such tokens are
// lineage roots: they have no issuer, and only they may hold tokens:admin.
func (s *Service) Mint(ctx context.Context, req MintRequest) (Issued, error) {
	return s.mint(ctx, req, "", time.Time{}, nil)
}

// mint mints a root (parent "", act nil) or the child of token parent, which expires at
// parentExp and whose subject (with its own actors) is act.
func (s *Service) mint(ctx context.Context, req MintRequest, parent string, parentExp time.Time, act *auth.Actor) (Issued, error) {
	if err := s.validate(req); err != nil {
		return Issued{}, err
	}
	now := s.now()
	id := auth.NewTokenID(now)
	ctx, span := s.tracer.Start(ctx, "tokens.issue", trace.WithAttributes(attribute.String(attrTokenID, id)))
	defer span.End()
	tok, claims, err := s.auth.Mint(auth.MintInput{Subject: req.Subject, Tenant: req.Tenant, Scopes: req.Scopes,
		TTL: req.TTL, TokenID: id, TokenType: req.TokenType, NotAfter: parentExp, Act: act})
	if errors.Is(err, auth.ErrNotAfterPassed) {
		return Issued{}, apperr.Wrap(apperr.Unprocessable, "Your token expires within a second: a token it mints cannot outlive it.", err)
	}
	if err != nil {
		return Issued{}, spanErr(span, fmt.Errorf("tokens: mint %s: %w", id, err))
	}
	meta := Token{ID: id, Tenant: req.Tenant, Subject: req.Subject, Type: req.TokenType,
		Scopes: claims.Scopes(), Description: req.Description, ParentID: parent,
		IssuedAt: claims.IssuedAt.Time, ExpiresAt: claims.ExpiresAt.Time}
	if err := s.store.Create(ctx, meta); err != nil {
		return Issued{}, spanErr(span, createErr(err))
	}
	s.m.issued.Add(ctx, 1, metric.WithAttributes(attribute.String("token_type", req.TokenType)))
	return Issued{TokenID: id, Token: tok, ExpiresAt: claims.ExpiresAt.Time, Scopes: meta.Scopes, TokenType: req.TokenType}, nil
}

func (s *Service) validate(req MintRequest) error {
	var fields []apperr.FieldError
	add := func(ptr, detail string) { fields = append(fields, apperr.FieldError{Pointer: ptr, Detail: detail}) }
	if req.Tenant == "" || len(req.Tenant) > maxTenantBytes || !utf8.ValidString(req.Tenant) || HasControl(req.Tenant) {
		add("/tenant", "must be 1..128 bytes of printable UTF-8")
	}
	if !subjectPattern.MatchString(req.Subject) {
		add("/subject", "must be 1..128 characters of A-Z a-z 0-9 . _ @ : + -")
	}
	if req.TTL < MinTTL || req.TTL > s.maxTTL {
		add("/ttlSeconds", fmt.Sprintf("must be within %d..%d seconds", int64(MinTTL/time.Second), int64(s.maxTTL/time.Second)))
	}
	if req.TokenType != TypeService && req.TokenType != TypeUser {
		add("/tokenType", "must be service or user")
	}
	if utf8.RuneCountInString(req.Description) > maxDescRunes || !utf8.ValidString(req.Description) || HasControl(req.Description) {
		add("/description", "must be at most 256 printable characters")
	}
	if len(fields) > 0 {
		return &apperr.Error{Kind: apperr.Validation, Detail: "The token request is out of bounds.", Fields: fields}
	}
	return validScopes(req.Scopes)
}

func validScopes(scopes []string) error {
	if n := len(auth.KnownScopes()); len(scopes) == 0 || len(scopes) > n {
		return &apperr.Error{Kind: apperr.Validation, Detail: fmt.Sprintf("Name 1..%d scopes.", n),
			Fields: []apperr.FieldError{{Pointer: "/scopes", Detail: fmt.Sprintf("must hold 1..%d known scopes", n)}}}
	}
	for i, sc := range scopes {
		if !auth.ValidScope(sc) {
			return &apperr.Error{Kind: apperr.Validation, Detail: "Unknown scope.",
				Fields: []apperr.FieldError{{Pointer: fmt.Sprintf("/scopes/%d", i), Detail: "is not a built-in scope (sessions:read, ...) or a custom <resource>:<action> one (lower case, the resource none of sessions, tokens, quotes, cases, events, webhooks)"}}}
		}
	}
	return nil
}

func createErr(err error) error {
	switch {
	case errors.Is(err, ErrExpired):
		return apperr.Wrap(apperr.Unprocessable, "The token would already be expired by the state store's clock.", err)
	case errors.Is(err, ErrExists):
		return apperr.Wrap(apperr.Conflict, "Token id collision; retry.", err)
	case errors.Is(err, ErrLineageFull):
		return apperr.Wrap(apperr.BoundExceeded, fmt.Sprintf("A lineage holds at most %d tokens over %d generations below its root token; mint from a token nearer the root, or from a new root.", MaxLineage, MaxDepth), err)
	case errors.Is(err, ErrIssuerGone):
		return apperr.Wrap(apperr.InvalidCredentials, "Your token is no longer live: it cannot mint tokens.", err)
	case errors.Is(err, ErrOutlivesIssuer):
		return apperr.Wrap(apperr.Unprocessable, "The token would outlive the token that mints it.", err)
	}
	return fmt.Errorf("tokens: create: %w", err)
}

// Reaches reports whether caller may read and revoke t: t is the caller's own token or was
// minted below it, or the caller holds tokens:admin (t is always of the caller's tenant).
func Reaches(caller *auth.Principal, t Token) bool {
	return caller.HasScope(auth.ScopeTokensAdmin) || t.Below(caller.TokenID)
}

// Get returns a token caller reaches (Reaches); any other id — another tenant's, an ancestor,
// a sibling, an unknown one — is the same NotFound.
func (s *Service) Get(ctx context.Context, caller *auth.Principal, id string) (Token, error) {
	if caller == nil {
		return Token{}, apperr.New(apperr.Unauthenticated, "")
	}
	ctx, span := s.tracer.Start(ctx, "tokens.get", trace.WithAttributes(attribute.String(attrTokenID, id)))
	defer span.End()
	t, err := s.store.Get(ctx, caller.Tenant, id)
	if err != nil && !errors.Is(err, apperr.NotFound) {
		return t, spanErr(span, err)
	}
	if err == nil && !Reaches(caller, t) {
		err = fmt.Errorf("token %s: out of the caller's lineage: %w", id, apperr.NotFound)
	}
	if err != nil {
		return Token{}, apperr.Wrap(apperr.NotFound, "No such token.", err)
	}
	return t, nil
}

// Page is one page of List.
type Page struct {
	Items []Token
	// NextCursor is "" on the last page.
	NextCursor string
}

// List pages through the tokens caller reaches, newest first: its tenant's with tokens:admin,
// else itself and the tokens minted below it. limit 0 means DefaultListLimit.
func (s *Service) List(ctx context.Context, caller *auth.Principal, cursor string, limit int) (Page, error) {
	if caller == nil {
		return Page{}, apperr.New(apperr.Unauthenticated, "")
	}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return Page{}, &apperr.Error{Kind: apperr.Validation, Detail: "The limit must be within 1..100.",
			Fields: []apperr.FieldError{{Parameter: "query:limit", Detail: "must be within 1..100"}}}
	}
	if cursor != "" && !ValidID(cursor) {
		return Page{}, &apperr.Error{Kind: apperr.Validation, Detail: "The cursor is not one this gateway issued.",
			Fields: []apperr.FieldError{{Parameter: "query:cursor", Detail: "is not a token id"}}}
	}
	ctx, span := s.tracer.Start(ctx, "tokens.list")
	defer span.End()
	list := s.store.List
	if !caller.HasScope(auth.ScopeTokensAdmin) {
		list = func(ctx context.Context, tenant, cursor string, limit int) ([]Token, string, error) {
			return s.store.ListLineage(ctx, tenant, caller.TokenID, cursor, limit)
		}
	}
	items, next, err := list(ctx, caller.Tenant, cursor, limit)
	if err != nil {
		return Page{}, spanErr(span, err)
	}
	return Page{Items: items, NextCursor: next}, nil
}

// Revoke revokes a token caller reaches (Reaches) and every token minted from it,
// transitively, in one atomic step (idempotent). Unknown ids succeed as in RFC 7009, and so
// does any id caller does not reach — another tenant's, its issuer, a sibling — which is left
// untouched: the answers are the same.
func (s *Service) Revoke(ctx context.Context, caller *auth.Principal, id, reason string) (RevokeResult, error) {
	if caller == nil {
		return RevokeUnknown, apperr.New(apperr.Unauthenticated, "")
	}
	if len(reason) > maxReasonBytes || !utf8.ValidString(reason) || HasControl(reason) {
		return RevokeUnknown, &apperr.Error{Kind: apperr.Validation, Detail: "The reason is at most 128 printable characters.",
			Fields: []apperr.FieldError{{Parameter: "query:reason", Detail: "at most 128 printable characters"}}}
	}
	ctx, span := s.tracer.Start(ctx, "tokens.revoke", trace.WithAttributes(attribute.String(attrTokenID, id)))
	defer span.End()
	if !caller.HasScope(auth.ScopeTokensAdmin) && id != caller.TokenID {
		// The lineage of a token never changes, so this read cannot go stale before the write.
		t, err := s.store.Get(ctx, caller.Tenant, id)
		switch {
		case errors.Is(err, apperr.NotFound) || err == nil && !Reaches(caller, t):
			span.SetAttributes(attribute.String("hashgate.token.revoke", "out_of_reach"))
			s.m.revoked.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", RevokeUnknown.String())))
			return RevokeUnknown, nil
		case err != nil:
			return RevokeUnknown, spanErr(span, err)
		}
	}
	s.revoked.Mark(tokenGroup, id, s.now()) // this gateway's next check reads Redis, not its cached copy
	res, cascaded, err := s.store.Revoke(ctx, caller.Tenant, id, reason)
	if err != nil {
		return res, spanErr(span, err)
	}
	now := s.now()
	for _, d := range cascaded { // before the answer: this gateway's next checks read Redis
		s.revoked.Mark(tokenGroup, d, now)
	}
	span.SetAttributes(attribute.String("hashgate.token.revoke", res.String()), attribute.Int("hashgate.token.cascaded", len(cascaded)))
	if len(cascaded) > 0 {
		s.m.revoked.Add(ctx, int64(len(cascaded)), metric.WithAttributes(attribute.String("outcome", "cascaded")))
	}
	s.m.revoked.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", res.String())))
	return res, nil
}
