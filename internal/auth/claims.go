package auth

import (
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Built-in scopes.
const (
	ScopeSessionsRead  = "sessions:read"
	ScopeSessionsWrite = "sessions:write"
	ScopeTokensRead    = "tokens:read"
	ScopeTokensWrite   = "tokens:write"
	ScopeQuotesRead    = "quotes:read"
	ScopeQuotesWrite   = "quotes:write"
	ScopeCasesRead     = "cases:read"
	ScopeCasesWrite    = "cases:write"
	ScopeWebhooksRead  = "webhooks:read"
	ScopeWebhooksWrite = "webhooks:write"
	ScopeEventsRead    = "events:read"
	// ScopeTokensAdmin widens tokens:read and tokens:write from the caller's own lineage (itself
	// and the tokens minted below it) to every token of its tenant. Only root tokens (the
	// bootstrap token, `gateway token mint`) hold it: POST /v1/tokens never grants it.
	ScopeTokensAdmin = "tokens:admin"
)

var knownScopes = []string{
	ScopeSessionsRead, ScopeSessionsWrite,
	ScopeTokensRead, ScopeTokensWrite,
	ScopeQuotesRead, ScopeQuotesWrite,
	ScopeCasesRead, ScopeCasesWrite,
	ScopeWebhooksRead, ScopeWebhooksWrite,
	ScopeEventsRead,
	ScopeTokensAdmin,
}

// KnownScopes returns a copy of the list of known scopes.
func KnownScopes() []string { return slices.Clone(knownScopes) }

// ValidScope reports whether s is a built-in scope or a custom one (CustomScope).
func ValidScope(s string) bool { return slices.Contains(knownScopes, s) || CustomScope(s) }

// Custom scopes name an operator's own resources for the access rules' require.scopes:
// "<resource>:<action>", lower case, the resource 1..32 characters of a-z 0-9 _ - and the
// action 1..32 of a-z 0-9 _ . -, each starting with a letter, the resource none of the
// gateway's own (reservedResources). They grant no gateway operation.
const maxScopePart = 32

// reservedResources are the gateway's own resources: only built-in scopes name them.
var reservedResources = []string{"sessions", "tokens", "quotes", "cases", "events", "webhooks"}

// CustomScope reports whether s is a custom scope.
func CustomScope(s string) bool {
	res, act, ok := strings.Cut(s, ":")
	return ok && scopePart(res, "_-") && scopePart(act, "_.-") && !slices.Contains(reservedResources, res)
}

// scopePart: 1..maxScopePart characters, a lower-case letter then a-z 0-9 or extra.
func scopePart(p, extra string) bool {
	if p == "" || len(p) > maxScopePart || p[0] < 'a' || p[0] > 'z' {
		return false
	}
	for i := 1; i < len(p); i++ {
		if c := p[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// Claims is the gateway's JWT claim set.
type Claims struct {
	jwt.RegisteredClaims
	// Tenant the subject acts for.
	Tenant string `json:"tenant"`
	// Scope is a space-separated list of scopes (RFC 8693 "scope" claim).
	Scope string `json:"scope"`
	// TokenType optionally distinguishes token kinds (e.g. "access").
	TokenType string `json:"token_type,omitempty"`
	// Act names the token that minted this one (RFC 8693 §4.1 actor claim); nil for a root.
	Act *Actor `json:"act,omitempty"`
}

// Actor is an RFC 8693 "act" claim: the subject of the token that minted this one, and, when
// that token was itself minted by another, its own actor (nested, most recent first).
type Actor struct {
	Subject string `json:"sub"`
	Act     *Actor `json:"act,omitempty"`
}

// MaxActorDepth bounds an actor chain: a lineage is at most 8 generations below its root.
const MaxActorDepth = 8

// depth is the number of actors in the chain starting at a (0 for nil).
func (a *Actor) depth() int {
	n := 0
	for ; a != nil; a = a.Act {
		n++
	}
	return n
}

// Scopes returns the individual scopes of the scope claim.
func (c *Claims) Scopes() []string { return strings.Fields(c.Scope) }

// HasScope reports whether the scope claim contains s.
func (c *Claims) HasScope(s string) bool {
	return s != "" && slices.Contains(c.Scopes(), s)
}
