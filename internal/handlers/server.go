package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
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
	// (revocation metadata). A nil TokenCheck accepts every correctly signed token.
	Auth       *auth.Authority
	TokenCheck auth.Checker
	// Sessions authenticates session tokens (cookie or header). Nil refuses them.
	SessionAuth SessionAuthenticator

	Tokens   TokenService
	Sessions SessionService
	Quotes   QuoteService
	Cases    CaseService

	// RetryAfter is sent with 503 answers.
	RetryAfter time.Duration
	// BodyLimitBytes bounds request bodies.
	BodyLimitBytes int64
	// Spec is the raw OpenAPI document served at /openapi.yaml.
	Spec []byte
}

// Server implements the generated StrictServerInterface.
type Server struct {
	Deps
}

var _ StrictServerInterface = (*Server)(nil)

// NewServer returns a server over deps.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.RetryAfter <= 0 {
		d.RetryAfter = time.Second
	}
	if d.BodyLimitBytes <= 0 {
		d.BodyLimitBytes = 64 << 10
	}
	return &Server{Deps: d}
}
