package auth

import (
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Known scopes.
const (
	ScopeSessionsRead  = "sessions:read"
	ScopeSessionsWrite = "sessions:write"
	ScopeTokensRead    = "tokens:read"
	ScopeTokensWrite   = "tokens:write"
	ScopeQuotesRead    = "quotes:read"
	ScopeQuotesWrite   = "quotes:write"
	ScopeCasesRead     = "cases:read"
	ScopeCasesWrite    = "cases:write"
)

var knownScopes = []string{
	ScopeSessionsRead, ScopeSessionsWrite,
	ScopeTokensRead, ScopeTokensWrite,
	ScopeQuotesRead, ScopeQuotesWrite,
	ScopeCasesRead, ScopeCasesWrite,
}

// KnownScopes returns a copy of the list of known scopes.
func KnownScopes() []string { return slices.Clone(knownScopes) }

// ValidScope reports whether s is a known scope.
func ValidScope(s string) bool { return slices.Contains(knownScopes, s) }

// Claims is the gateway's JWT claim set.
type Claims struct {
	jwt.RegisteredClaims
	// Tenant the subject acts for.
	Tenant string `json:"tenant"`
	// Scope is a space-separated list of scopes (RFC 8693 "scope" claim).
	Scope string `json:"scope"`
	// TokenType optionally distinguishes token kinds (e.g. "access").
	TokenType string `json:"token_type,omitempty"`
}

// Scopes returns the individual scopes of the scope claim.
func (c *Claims) Scopes() []string { return strings.Fields(c.Scope) }

// HasScope reports whether the scope claim contains s.
func (c *Claims) HasScope(s string) bool {
	return s != "" && slices.Contains(c.Scopes(), s)
}
