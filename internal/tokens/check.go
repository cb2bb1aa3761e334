package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store/storeerr"
)

// Introspection is the RFC 7662 answer. Only Active is set for a token that is not live.
type Introspection struct {
	Active    bool
	Scope     string
	Subject   string
	TokenID   string
	TokenType string
	Tenant    string
	Issuer    string
	ExpiresAt int64 // seconds since the epoch
	IssuedAt  int64
	// Act is who minted the token (RFC 8693 act claim); nil for a root token.
	Act *auth.Actor
}

// Introspect answers whether token is live for caller's tenant. Anything not live — bad
// signature, wrong issuer or audience, expired, revoked, unknown, another tenant's — is
// {Active:false}, never an error. The errors are Redis being unreachable (503) and a failure
// to read the token's state (500): the answer is then unknown, and claiming "inactive" would be
// a lie the caller might act on.
func (s *Service) Introspect(ctx context.Context, caller *auth.Principal, token string) (Introspection, error) {
	if caller == nil {
		return Introspection{}, apperr.New(apperr.Unauthenticated, "")
	}
	claims, err := s.auth.Verify(token)
	if err != nil || claims.Tenant != caller.Tenant {
		s.m.introspect(ctx, false)
		return Introspection{}, nil
	}
	ctx, span := s.tracer.Start(ctx, "tokens.introspect", trace.WithAttributes(attribute.String(attrTokenID, claims.ID)))
	defer span.End()
	if o, err := s.live(ctx, claims); err != nil {
		if o == outcomeUnavailable || o == outcomeError {
			return Introspection{}, spanErr(span, err)
		}
		s.m.introspect(ctx, false)
		return Introspection{}, nil
	}
	s.m.introspect(ctx, true)
	out := Introspection{Active: true, Scope: claims.Scope, Subject: claims.Subject, TokenID: claims.ID,
		TokenType: claims.TokenType, Tenant: claims.Tenant, Issuer: claims.Issuer, Act: claims.Act}
	if claims.ExpiresAt != nil {
		out.ExpiresAt = claims.ExpiresAt.Unix()
	}
	if claims.IssuedAt != nil {
		out.IssuedAt = claims.IssuedAt.Unix()
	}
	return out, nil
}

// Check implements auth.Checker: the verified token c must have live metadata — present, of
// the same tenant and scopes, not revoked, not expired. Refusals are InvalidCredentials
// (401); Redis unreachable with nothing cached is an error wrapping storeerr.ErrUnavailable
// (the store classifies it); any other failure to read the state is apperr.Internal (500),
// never a refusal.
func (s *Service) Check(ctx context.Context, c *auth.Claims) error {
	start := time.Now()
	ctx, span := s.tracer.Start(ctx, "tokens.check")
	defer span.End()
	if span.IsRecording() { // the hot path builds no attributes for an unsampled span
		span.SetAttributes(attribute.String(attrTokenID, c.ID))
	}
	o, err := s.live(ctx, c)
	s.m.checked(ctx, o, time.Since(start))
	if o == outcomeRevoked {
		s.m.revokedRejected.Add(ctx, 1)
	}
	if err != nil {
		span.SetAttributes(attribute.String("hashgate.token.check", string(o)))
		if o == outcomeUnavailable || o == outcomeError {
			return spanErr(span, err)
		}
	}
	return err
}

// tokenGroup is the recent.Writes group of token ids.
const tokenGroup = "token"

// outcome of one check, for metrics and spans.
type outcome string

const (
	outcomeOK          outcome = "ok"
	outcomeUnknown     outcome = "unknown"
	outcomeRevoked     outcome = "revoked"
	outcomeExpired     outcome = "expired"
	outcomeMismatch    outcome = "mismatch"
	outcomeCorrupt     outcome = "corrupt"
	outcomeUnavailable outcome = "unavailable"
	outcomeError       outcome = "error"
)

var refusalDetail = map[outcome]string{
	outcomeUnknown:  "The token is not known to this gateway.",
	outcomeRevoked:  "The token has been revoked.",
	outcomeExpired:  "The token has expired.",
	outcomeMismatch: "The token does not match its record.",
	outcomeCorrupt:  "The token's record cannot be read.",
}

// refusal returns a fresh 401 each time (callers may add headers to it).
func refusal(o outcome) error { return apperr.New(apperr.InvalidCredentials, refusalDetail[o]) }

// live reads the token's state (cached) and decides.
func (s *Service) live(ctx context.Context, c *auth.Claims) (outcome, error) {
	st, err := s.store.State(ctx, c.Tenant, c.ID, s.cacheTTL)
	if err == nil && st.CacheHit && s.revoked.Marked(tokenGroup, c.ID, s.now()) {
		// Revoked by this gateway a moment ago: the cached copy may predate it.
		st, err = s.store.State(ctx, c.Tenant, c.ID, 0)
	}
	if err == nil {
		s.m.cache(st.CacheHit)
	}
	switch {
	case err == nil:
	case errors.Is(err, apperr.NotFound):
		return outcomeUnknown, refusal(outcomeUnknown)
	case errors.Is(err, apperr.ErrCorrupt):
		return outcomeCorrupt, refusal(outcomeCorrupt)
	case errors.Is(err, storeerr.ErrUnavailable):
		return outcomeUnavailable, fmt.Errorf("tokens: check %s: %w", c.ID, err)
	default:
		// Not an answer about the token: a 500, never a refusal its client would drop it for.
		s.log.WarnContext(ctx, "token check failed", "token_id", c.ID, "err", err)
		return outcomeError, apperr.Wrap(apperr.Internal, "", fmt.Errorf("tokens: check %s: %w", c.ID, err))
	}
	switch {
	case st.Tenant != c.Tenant || st.Scope != c.Scope:
		return outcomeMismatch, refusal(outcomeMismatch)
	case st.Revoked:
		return outcomeRevoked, refusal(outcomeRevoked)
	case st.ExpiresAtMs <= s.now().UnixMilli():
		return outcomeExpired, refusal(outcomeExpired)
	}
	return outcomeOK, nil
}

const attrTokenID = "hashgate.token.id"

func spanErr(span trace.Span, err error) error {
	span.RecordError(err)
	span.SetStatus(codes.Error, "")
	return err
}
