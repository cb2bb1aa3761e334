package client

// The built-in scopes. Scope is a pattern in the contract (custom `<resource>:<action>` scopes
// for the access rules are valid too), so the generator names no constants for it.
const (
	ScopeSessionsRead  Scope = "sessions:read"
	ScopeSessionsWrite Scope = "sessions:write"
	ScopeTokensRead    Scope = "tokens:read"
	ScopeTokensWrite   Scope = "tokens:write"
	ScopeQuotesRead    Scope = "quotes:read"
	ScopeQuotesWrite   Scope = "quotes:write"
	ScopeCasesRead     Scope = "cases:read"
	ScopeCasesWrite    Scope = "cases:write"
	ScopeEventsRead    Scope = "events:read"
	ScopeTokensAdmin   Scope = "tokens:admin"
)
