// Package apperr holds the gateway's expected refusals: one Kind per RFC 9457 problem type, and
// the Error that carries a Kind with a safe detail. Handlers and repositories return these; the
// HTTP error handler is the one place that renders them.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// TypeBase prefixes every problem type URI.
const TypeBase = "https://hashgate.dev/problems/"

// Kind is one class of refusal: a stable slug (the problem type), an HTTP status and a title.
// A *Kind is itself an error, so repositories can wrap it: fmt.Errorf("quote %s: %w", id, apperr.NotFound).
type Kind struct {
	Slug   string
	Status int
	Title  string
}

func (k *Kind) Error() string { return k.Slug }

// Type is the problem type URI of the kind.
func (k *Kind) Type() string { return TypeBase + k.Slug }

// The table of every refusal the gateway makes. Statuses live here and only here.
var (
	Validation           = &Kind{"validation", 400, "The request does not match the contract"}
	Unauthenticated      = &Kind{"unauthenticated", 401, "Authentication required"}
	InvalidCredentials   = &Kind{"invalid-credentials", 401, "The credentials are not valid"}
	InsufficientScope    = &Kind{"insufficient-scope", 403, "The credentials lack a required scope"}
	StepUpRequired       = &Kind{"step-up-required", 403, "A stronger authentication level is required"}
	NotFound             = &Kind{"not-found", 404, "No such resource"}
	MethodNotAllowed     = &Kind{"method-not-allowed", 405, "Method not allowed"}
	Conflict             = &Kind{"conflict", 409, "The resource's state does not allow this"}
	InvalidStatus        = &Kind{"invalid-status", 409, "The transition is not allowed from the current status"}
	MaxEscalation        = &Kind{"max-escalation", 409, "The case is already at the maximum escalation level"}
	InFlight             = &Kind{"request-in-flight", 409, "A request with this Idempotency-Key is still being processed"}
	Gone                 = &Kind{"challenge-gone", 410, "No live MFA challenge"}
	PreconditionFailed   = &Kind{"precondition-failed", 412, "The If-Match ETag is stale"}
	PayloadTooLarge      = &Kind{"payload-too-large", 413, "The request body is too large"}
	UnsupportedMediaType = &Kind{"unsupported-media-type", 415, "Unsupported content type"}
	Unprocessable        = &Kind{"unprocessable", 422, "The request cannot be processed"}
	BoundExceeded        = &Kind{"bound-exceeded", 422, "The object would exceed its declared bounds"}
	WrongCode            = &Kind{"mfa-code-invalid", 422, "The MFA code is not valid"}
	IdempotencyMismatch  = &Kind{"idempotency-key-reused", 422, "The Idempotency-Key was used with a different request"}
	PreconditionRequired = &Kind{"precondition-required", 428, "If-Match is required"}
	RateLimited          = &Kind{"rate-limited", 429, "Too many requests"}
	Internal             = &Kind{"internal", 500, "Internal server error"}
	Unavailable          = &Kind{"unavailable", 503, "The state store is unavailable"}
	// Refusals net/http makes before any handler runs, shaped into problems on the wire
	// (handlers.ShapeRefusals).
	MalformedRequest          = &Kind{"malformed-request", 400, "The request is not well-formed HTTP"}
	ExpectationFailed         = &Kind{"expectation-failed", 417, "The expectation cannot be met"}
	HeaderTooLarge            = &Kind{"header-too-large", 431, "The request header fields are too large"}
	UnsupportedTransferCoding = &Kind{"unsupported-transfer-coding", 501, "Unsupported transfer coding"}
	HTTPVersionNotSupported   = &Kind{"http-version-not-supported", 505, "HTTP version not supported"}
	// MFARequired refuses a session whose login waits for its MFA verify (created with
	// mfaRequired): it is not logged in yet, so 401, which proxies turn into the login flow.
	MFARequired = &Kind{"mfa-required", 401, "The login is not complete until its MFA is verified"}
	// SessionLimit refuses a login at GATEWAY_SESSION_MAX_PER_USER with the refuse policy.
	SessionLimit = &Kind{"session-limit-reached", 422, "The user already has the maximum number of live sessions"}
	// QuotaExceeded refuses a create over a tenant quota (GATEWAY_TENANT_MAX_*); the problem
	// names the quota and its limit, and nothing is written.
	QuotaExceeded = &Kind{"quota-exceeded", 429, "A tenant quota is exhausted"}
)

// FieldError names one failing field (JSON Pointer) or parameter.
type FieldError struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	Detail    string `json:"detail"`
}

// Error is a refusal with a detail that is safe to show to the caller. Cause is kept for logs
// and errors.Is/As, never rendered.
type Error struct {
	Kind       *Kind
	Detail     string
	Fields     []FieldError
	RetryAfter time.Duration
	// Extra members rendered into the problem body (e.g. attemptsLeft).
	Extra map[string]any
	// Headers added to the response (e.g. RateLimit-Policy, WWW-Authenticate).
	Headers map[string]string
	Cause   error
}

// New returns a refusal of kind k with a safe detail.
func New(k *Kind, detail string) *Error { return &Error{Kind: k, Detail: detail} }

// Newf is New with formatting.
func Newf(k *Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Wrap returns a refusal of kind k with a safe detail and a cause kept for logs.
func Wrap(k *Kind, detail string, cause error) *Error {
	return &Error{Kind: k, Detail: detail, Cause: cause}
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Kind.Slug + ": " + e.Detail + ": " + e.Cause.Error()
	}
	if e.Detail == "" {
		return e.Kind.Slug
	}
	return e.Kind.Slug + ": " + e.Detail
}

// Is makes errors.Is(err, apperr.NotFound) true for an *Error of that kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(*Kind)
	return ok && k == e.Kind
}

func (e *Error) Unwrap() error { return e.Cause }

// With sets an extra problem member and returns e.
func (e *Error) With(key string, value any) *Error {
	if e.Extra == nil {
		e.Extra = map[string]any{}
	}
	e.Extra[key] = value
	return e
}

// WithHeader sets a response header and returns e.
func (e *Error) WithHeader(name, value string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[name] = value
	return e
}

// As finds the refusal in err's chain: an *Error, or a bare *Kind wrapped with %w (which gets
// an empty detail). ok is false when err is not an expected refusal.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	var k *Kind
	if errors.As(err, &k) {
		return &Error{Kind: k}, true
	}
	return nil, false
}
