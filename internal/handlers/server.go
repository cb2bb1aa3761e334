package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/store"
)

// Pinger reports whether the state store answers.
type Pinger interface {
	Ping(ctx context.Context) (time.Duration, error)
}

// Deps are what the server calls. Domain services are declared by the file that uses them.
type Deps struct {
	Logger  *slog.Logger
	Version string
	// Store is pinged by /readyz; Caps are reported there.
	Store Pinger
	Caps  store.Capabilities
	// Auth verifies and mints JWTs; TokenCheck decides whether a verified token is still live
	// (revocation metadata).
	Auth       *auth.Authority
	TokenCheck auth.Checker
	// SessionAuth authenticates session tokens (cookie or header).
	SessionAuth SessionAuthenticator

	Tokens   TokenService
	Sessions SessionService
	Quotes   QuoteService
	Cases    CaseService
	Webhooks WebhookService
	Events   EventService
	// EventsOff (GATEWAY_EVENTS=false): the event reads answer 404 and webhook registrations
	// 409, naming the setting.
	EventsOff bool
	// SessionEvents is which session events are written (GATEWAY_SESSION_EVENTS): a webhook
	// naming a session type that is not would receive none; its registration answers 409,
	// naming the setting.
	SessionEvents events.SessionEvents

	// EventStream bounds the SSE connections of GET /v1/events/stream.
	EventStream EventStreamOptions
	// Audit logs refused authentications and rate-limited requests, aggregated (nil: none).
	Audit *events.Audit
	// Refusals turns rate-limit and quota refusals into events, aggregated per window (nil: none).
	Refusals *events.Refusals

	// RateLimits are the request-rate limits (all off when its Limiter is nil).
	RateLimits RateLimits

	// RetryAfter is sent with 503 answers.
	RetryAfter time.Duration
	// BodyLimitBytes bounds request bodies.
	BodyLimitBytes int64
	// Spec is the raw OpenAPI document served at /openapi.yaml.
	Spec []byte
	// Meter records the handlers' own metrics (hashgate_auth_failures; nil: none exported).
	Meter metric.Meter
	// Rules are forward auth's access rules (GATEWAY_ACCESS_RULES); nil: none, every live
	// credential passes as before.
	Rules RuleSource
	// PublicURL is the gateway's URL as its callers reach it (GATEWAY_PUBLIC_URL): problem
	// type URIs are its /problems/{slug} pages. Empty: the pages' paths alone.
	PublicURL string
	// AssertionEntries bounds the X-Auth-Assertion values kept for reuse, one per credential
	// (0: auth.DefaultAssertionCacheSize).
	AssertionEntries int
}

// Server implements the generated StrictServerInterface.
type Server struct {
	Deps
	failures   *authFailures
	assertions *auth.Asserter // X-Auth-Assertion, signed with Auth's key
	// closing ends every SSE stream (CloseStreams).
	closing     chan struct{}
	closingOnce sync.Once
}

// CloseStreams ends every open event stream (each sends a last "shutdown" event): called
// before the HTTP server's graceful shutdown, which would otherwise wait for them.
func (s *Server) CloseStreams() { s.closingOnce.Do(func() { close(s.closing) }) }

func (s *Server) streamsDone() <-chan struct{} { return s.closing }

var _ StrictServerInterface = (*Server)(nil)

// ErrMissingDependency is NewServer's refusal of deps without a store, an authority or a service.
var ErrMissingDependency = errors.New("handlers: missing dependency")

// NewServer returns a server over deps. The store, the authority, the token check, the session
// authenticator and the four services are required: a gateway missing one fails here, at
// start, never per request.
func NewServer(d Deps) (*Server, error) {
	var missing []string
	for name, absent := range map[string]bool{
		"Store": d.Store == nil, "Auth": d.Auth == nil, "TokenCheck": d.TokenCheck == nil,
		"SessionAuth": d.SessionAuth == nil, "Tokens": d.Tokens == nil, "Sessions": d.Sessions == nil,
		"Quotes": d.Quotes == nil, "Cases": d.Cases == nil, "Events": d.Events == nil, "Webhooks": d.Webhooks == nil,
	} {
		if absent {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%w: %s", ErrMissingDependency, strings.Join(missing, ", "))
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.RetryAfter <= 0 {
		d.RetryAfter = time.Second
	}
	if d.BodyLimitBytes <= 0 {
		d.BodyLimitBytes = 64 << 10
	}
	failures, err := newAuthFailures(d.Meter)
	if err != nil {
		return nil, err
	}
	return &Server{Deps: d, failures: failures, assertions: auth.NewAsserter(d.Auth, d.AssertionEntries), closing: make(chan struct{})}, nil
}
