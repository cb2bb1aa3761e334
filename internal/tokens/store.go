package tokens

import (
	"context"
	"errors"
	"time"
)

// Store keeps token metadata (internal/repo/tokenstore implements it over Redis). Every
// method is scoped to a tenant: another tenant's id answers as an unknown one. Refusals are
// the errors below or apperr kinds; Redis unreachable is an error wrapping
// storeerr.ErrUnavailable (the store classifies driver errors before returning them).
type Store interface {
	// Create writes t's metadata, linked to its issuer t.ParentID when set (the issuer live,
	// of the same tenant, expiring no earlier than t).
	Create(ctx context.Context, t Token) error
	// Get reads a token (apperr.NotFound when unknown; apperr.ErrCorrupt when unreadable).
	Get(ctx context.Context, tenant, id string) (Token, error)
	// State reads what the per-request check needs; cacheTTL > 0 may answer from a
	// client-side cache that a revocation invalidates (0 reads the store).
	State(ctx context.Context, tenant, id string, cacheTTL time.Duration) (State, error)
	// List pages the tenant's tokens newest first, strictly older than cursor ("" for the
	// first page); the next cursor is "" on the last page.
	List(ctx context.Context, tenant, cursor string, limit int) ([]Token, string, error)
	// ListLineage is List restricted to token id and the tokens minted below it.
	ListLineage(ctx context.Context, tenant, id, cursor string, limit int) ([]Token, string, error)
	// Revoke revokes a token and every token minted below it in one atomic step, and returns
	// the ids of the descendants revoked now. An unknown id is RevokeUnknown.
	Revoke(ctx context.Context, tenant, id, reason string) (RevokeResult, []string, error)
}

// State is what the per-request check reads: four fields of the token's metadata.
type State struct {
	Tenant      string
	Scope       string // space-separated, as in the JWT's scope claim
	ExpiresAtMs int64
	Revoked     bool
	// CacheHit is true when the answer came from the client-side cache (no round trip).
	CacheHit bool
}

// A lineage (a root token and every token minted under it, transitively) is bounded, which
// bounds the work of one revocation.
const (
	// MaxLineage bounds the tokens minted under one root, all generations together, over the
	// root's life (revoked and expired ones count).
	MaxLineage = 1000
	// MaxDepth bounds the generations below a root (a root's children are depth 1).
	MaxDepth = 8
)

// The store's refusals of a create. A record it cannot read is apperr.ErrCorrupt.
var (
	// ErrExpired: the expiry is not in the future by the store's clock.
	ErrExpired = errors.New("token expiry is not in the future")
	// ErrExists: a record already exists under this id (ids are random: never expected).
	ErrExists = errors.New("token id already exists")
	// ErrIssuerGone: the issuing token is not live (revoked, expired, unknown, another
	// tenant's) or its lineage changed meanwhile.
	ErrIssuerGone = errors.New("issuing token is not live")
	// ErrOutlivesIssuer: the token would expire after its issuer.
	ErrOutlivesIssuer = errors.New("token would outlive its issuer")
	// ErrLineageFull: MaxLineage tokens were minted under the root already, or the new token
	// would be deeper than MaxDepth.
	ErrLineageFull = errors.New("token lineage full")
)
