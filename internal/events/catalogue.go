package events

// Type names an event; the catalogue below is every type the gateway emits (the spec's
// EventType enum and docs/EVENTS.md list the same, TestCatalogueMatchesSpec checks it).
type Type string

// Tokens: written by the token scripts in the tenant's stream.
const (
	TokenIssued  Type = "token.issued"
	TokenRevoked Type = "token.revoked"
)

// Sessions: written by the session scripts in the user's outbox, relayed to the tenant's stream.
const (
	SessionCreated       Type = "session.created"
	SessionMFAChallenged Type = "session.mfa_challenged"
	SessionMFAVerified   Type = "session.mfa_verified"
	SessionMFAFailed     Type = "session.mfa_failed"
	SessionMFALocked     Type = "session.mfa_locked"
	SessionRotated       Type = "session.rotated"
	SessionRevoked       Type = "session.revoked"
	SessionLoggedOut     Type = "session.logged_out"
	SessionEvicted       Type = "session.evicted"
)

// Quotes and cases: written by the quote and case scripts in the tenant's stream.
const (
	QuoteCreated   Type = "quote.created"
	QuoteUpdated   Type = "quote.updated"
	QuoteSubmitted Type = "quote.submitted"
	QuoteDeleted   Type = "quote.deleted"
	CaseCreated    Type = "case.created"
	CaseEscalated  Type = "case.escalated"
	CaseAssigned   Type = "case.assigned"
	CaseResolved   Type = "case.resolved"
	CaseReopened   Type = "case.reopened"
)

// Refusals: a caller's requests refused under one limit in one aggregation window, one event
// per window across the gateways (refusals.go; written by refusal_window.lua).
const (
	RateLimitRefused Type = "ratelimit.refused"
	QuotaRefused     Type = "quota.refused"
)

// Info describes one type of the catalogue.
type Info struct {
	Type Type
	// Subject says what the subject id names.
	Subject string
	// Security marks the types the audit log writes as info lines too.
	Security bool
	// Emitted is false for reserved types no script writes yet.
	Emitted bool
	// Data names the keys of the type's data object.
	Data []string
}

// caseMove is the data of every case transition (case_event.lua).
var caseMove = []string{"status", "fromStatus", "level", "team", "assigned", "stateVersion"}

// Catalogue is every event type, in the order the docs list them.
var Catalogue = []Info{
	{TokenIssued, "tokenId", true, true, []string{"tokenType", "scopes", "expiresAtMs", "parentId"}},
	{TokenRevoked, "tokenId", true, true, []string{"reason", "cascadeFrom"}},
	{SessionCreated, "sessionId", true, true, []string{"userTag", "authLevel", "mfaRequired"}},
	{SessionMFAChallenged, "sessionId", true, true, []string{"userTag", "expiresAtMs"}},
	{SessionMFAVerified, "sessionId", true, true, []string{"userTag"}},
	{SessionMFAFailed, "sessionId", true, true, []string{"userTag", "failedAttempts"}},
	{SessionMFALocked, "sessionId", true, true, []string{"userTag", "retryAfterMs"}},
	{SessionRotated, "sessionId", true, true, []string{"userTag"}},
	{SessionRevoked, "sessionId", true, true, []string{"userTag", "reason"}},
	{SessionLoggedOut, "sessionId", true, true, []string{"userTag"}},
	{SessionEvicted, "sessionId", true, true, []string{"userTag", "evictedBy"}},
	{QuoteCreated, "quoteId", false, true, []string{"status", "currency", "stateVersion"}},
	{QuoteUpdated, "quoteId", false, true, []string{"status", "stateVersion", "change"}},
	{QuoteSubmitted, "quoteId", false, true, []string{"status", "stateVersion", "change"}},
	{QuoteDeleted, "quoteId", false, true, []string{"status"}},
	{CaseCreated, "caseId", false, true, []string{"status", "level", "team", "assigned", "dueAtMs"}},
	{CaseEscalated, "caseId", false, true, append(caseMove, "auto")},
	{CaseAssigned, "caseId", false, true, caseMove},
	{CaseResolved, "caseId", false, true, caseMove},
	{CaseReopened, "caseId", false, true, caseMove},
	{RateLimitRefused, "tokenId or sessionId", false, true, append(refusalWindow, "policy", "limit", "policyWindowMs")},
	{QuotaRefused, "tokenId or sessionId", false, true, append(refusalWindow, "quota", "limit")},
}

// refusalWindow is the data every refusal event carries (refusal_window.lua adds it).
var refusalWindow = []string{"windowStartMs", "windowMs", "count"}

var byType = func() map[Type]Info {
	m := make(map[Type]Info, len(Catalogue))
	for _, i := range Catalogue {
		m[i.Type] = i
	}
	return m
}()

// Lookup returns the catalogue's entry for t.
func Lookup(t Type) (Info, bool) {
	i, ok := byType[t]
	return i, ok
}
