// Package apperr holds the gateway's expected refusals: one Kind per RFC 9457 problem type, and
// the Error that carries a Kind with a safe detail. Handlers and repositories return these; the
// HTTP error handler is the one place that renders them.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// PagePath is where, under the gateway's public URL, each problem type's page is served:
// PagePath + slug (GET /problems/{slug}).
const PagePath = "/problems/"

// Kind is one class of refusal: a stable slug (the problem type), an HTTP status and a title.
// A *Kind is itself an error, so repositories can wrap it: fmt.Errorf("quote %s: %w", id, apperr.NotFound).
type Kind struct {
	Slug   string
	Status int
	Title  string
}

func (k *Kind) Error() string { return k.Slug }

// Type is the problem type URI of the kind: its page under base, the gateway's public URL
// (GATEWAY_PUBLIC_URL, e.g. https://api.example.com/hashgate); with no base, the page's path
// alone (/problems/validation), a relative reference a client resolves against the request's
// URL (RFC 9457 §3.1.1). A kind without a slug (Blank) is about:blank.
func (k *Kind) Type(base string) string {
	if k.Slug == "" {
		return "about:blank"
	}
	return strings.TrimSuffix(base, "/") + PagePath + k.Slug
}

// Blank is the kind of a status the table has no type for: about:blank, whose title is the
// status text (RFC 9457 §4.2.1).
func Blank(status int) *Kind { return &Kind{Status: status, Title: http.StatusText(status)} }

// table is every kind newKind made, in the order of the table below.
var table []*Kind

func newKind(slug string, status int, title string) *Kind {
	k := &Kind{Slug: slug, Status: status, Title: title}
	table = append(table, k)
	return k
}

// Kinds returns every kind of the table: every problem type the gateway answers with.
func Kinds() []*Kind { return slices.Clone(table) }

// Lookup finds the kind of a slug.
func Lookup(slug string) (*Kind, bool) {
	for _, k := range table {
		if k.Slug == slug {
			return k, true
		}
	}
	return nil, false
}

// The table of every refusal the gateway makes. Statuses live here and only here; each kind's
// page (what it means, what to do) is in pages.go.
var (
	Validation           = newKind("validation", 400, "The request does not match the contract")
	Unauthenticated      = newKind("unauthenticated", 401, "Authentication required")
	InvalidCredentials   = newKind("invalid-credentials", 401, "The credentials are not valid")
	AccessDenied         = newKind("access-denied", 403, "The access rules refuse this request")
	InsufficientScope    = newKind("insufficient-scope", 403, "The credentials lack a required scope")
	StepUpRequired       = newKind("step-up-required", 403, "A stronger authentication level is required")
	NotFound             = newKind("not-found", 404, "No such resource")
	MethodNotAllowed     = newKind("method-not-allowed", 405, "Method not allowed")
	Conflict             = newKind("conflict", 409, "The resource's state does not allow this")
	InvalidStatus        = newKind("invalid-status", 409, "The transition is not allowed from the current status")
	MaxEscalation        = newKind("max-escalation", 409, "The case is already at the maximum escalation level")
	InFlight             = newKind("request-in-flight", 409, "A request with this Idempotency-Key is still being processed")
	Gone                 = newKind("challenge-gone", 410, "No live MFA challenge")
	PreconditionFailed   = newKind("precondition-failed", 412, "The If-Match ETag is stale")
	PayloadTooLarge      = newKind("payload-too-large", 413, "The request body is too large")
	UnsupportedMediaType = newKind("unsupported-media-type", 415, "Unsupported content type")
	Unprocessable        = newKind("unprocessable", 422, "The request cannot be processed")
	BoundExceeded        = newKind("bound-exceeded", 422, "The object would exceed its declared bounds")
	WrongCode            = newKind("mfa-code-invalid", 422, "The MFA code is not valid")
	IdempotencyMismatch  = newKind("idempotency-key-reused", 422, "The Idempotency-Key was used with a different request")
	PreconditionRequired = newKind("precondition-required", 428, "If-Match is required")
	RateLimited          = newKind("rate-limited", 429, "Too many requests")
	Internal             = newKind("internal", 500, "Internal server error")
	Unavailable          = newKind("unavailable", 503, "The state store is unavailable")
	// Refusals net/http makes before any handler runs, shaped into problems on the wire
	// (handlers.ShapeRefusals).
	MalformedRequest          = newKind("malformed-request", 400, "The request is not well-formed HTTP")
	ExpectationFailed         = newKind("expectation-failed", 417, "The expectation cannot be met")
	HeaderTooLarge            = newKind("header-too-large", 431, "The request header fields are too large")
	UnsupportedTransferCoding = newKind("unsupported-transfer-coding", 501, "Unsupported transfer coding")
	HTTPVersionNotSupported   = newKind("http-version-not-supported", 505, "HTTP version not supported")
	// MFARequired refuses a session whose login waits for its MFA verify (created with
	// mfaRequired): it is not logged in yet, so 401, which proxies turn into the login flow.
	MFARequired = newKind("mfa-required", 401, "The login is not complete until its MFA is verified")
	// SessionLimit refuses a login at GATEWAY_SESSION_MAX_PER_USER with the refuse policy.
	SessionLimit = newKind("session-limit-reached", 422, "The user already has the maximum number of live sessions")
	// QuotaExceeded refuses a create over a tenant quota (GATEWAY_TENANT_MAX_*); the problem
	// names the quota and its limit, and nothing is written.
	QuotaExceeded = newKind("quota-exceeded", 429, "A tenant quota is exhausted")
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

// ErrCorrupt marks a stored object whose fields are missing or malformed. It is never served
// as valid; handlers render it as 500 (or 401 for credentials) and the store counts and logs it
// without values. Stores wrap it (repo.ErrCorrupt is this error); services test for it here.
var ErrCorrupt = errors.New("corrupt object")
