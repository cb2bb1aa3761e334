package apperr

// Page is what a problem type's page (GET /problems/{slug}) says besides its title and
// status: when the gateway answers with it, and what the caller should do.
type Page struct {
	When string
	Do   string
}

// PageOf returns k's page; ok is false for a kind without one (a test keeps every kind of the
// table covered).
func PageOf(k *Kind) (Page, bool) {
	p, ok := pages[k]
	return p, ok
}

var pages = map[*Kind]Page{
	Validation: {
		When: "A parameter or the body does not match the operation's contract: a missing or unknown member, a wrong type or format, a value out of range, a body that is not one well-formed JSON value. The problem's errors list each failing field by its JSON pointer (or parameter).",
		Do:   "Fix the fields the errors name and send the request again; the operation's request schema is in /docs and /openapi.yaml. Retrying unchanged fails the same way.",
	},
	Unauthenticated: {
		When: "The operation needs a credential and the request carries none of the kinds it takes. Service operations take an API token as Authorization: Bearer TOKEN; the end user's operations (/v1/session...) take the session token in the X-Session-Token header or the __Host-hg_session cookie; GET /v1/authorize takes either.",
		Do:   "Send the credential the detail names, where it names. An API token comes from POST /v1/tokens, gateway token mint or the bootstrap token printed at start; a session token from POST /v1/sessions.",
	},
	InvalidCredentials: {
		When: "A credential was sent but is not valid: a token that is expired, revoked, malformed or signed by an unknown key, a session that has ended, or a session token sent as a bearer token.",
		Do:   "Get a new credential (a new token, or a new login for a session) and send it where the detail says. Retrying with the same credential fails the same way.",
	},
	AccessDenied: {
		When: "GET /v1/authorize decided the forwarded request by an access rule (GATEWAY_ACCESS_RULES) that refuses it: a deny rule, a require rule the credential does not meet (a group, scope, tenant or kind it lacks), or a forwarded path that does not decode. The detail names the rule and what is missing.",
		Do:   "Use a credential the rule accepts, or ask the operator to change the rules: gateway rules explain FILE --method M --host H --uri U says which rule decides a request and why.",
	},
	InsufficientScope: {
		When: "The API token is valid but lacks a scope the operation needs; the detail and the WWW-Authenticate header name it.",
		Do:   "Use a token minted with that scope (POST /v1/tokens with scopes, or gateway token mint --scope).",
	},
	StepUpRequired: {
		When: "The session is valid but its authentication level is too low for the request: GET /v1/authorize?level=MFA, or an access rule that requires MFA, on a BASIC session.",
		Do:   "Step the session up: the service asks POST /v1/sessions/{sessionId}/mfa/challenge, delivers the code to the user out of band (SMS, e-mail, an app), and sends it to POST /v1/sessions/{sessionId}/mfa/verify; then use the token that verify returns.",
	},
	NotFound: {
		When: "No route matches the path, or the resource does not exist in the caller's tenant (another tenant's resource answers exactly as an unknown one), or it has expired.",
		Do:   "Check the path and the id. A resource that has expired or been deleted does not come back: create it again.",
	},
	MethodNotAllowed: {
		When: "The path exists but does not take this method. The Allow header lists the methods it takes.",
		Do:   "Send one of the methods in Allow.",
	},
	Conflict: {
		When: "The resource's current state does not allow the change, e.g. editing a quote that has been submitted.",
		Do:   "Read the resource again (GET) and decide from its current state; retrying unchanged fails the same way.",
	},
	InvalidStatus: {
		When: "A change that the object's current status does not allow: resolving a case that is already RESOLVED, reopening one that is not, changing a quote that is no longer a DRAFT.",
		Do:   "Read the object again and send a change its status allows: a case escalates, is assigned or resolved from OPEN or ESCALATED and reopens from RESOLVED; only a DRAFT quote changes.",
	},
	MaxEscalation: {
		When: "Escalating a case that is already at the maximum escalation level (GATEWAY_CASE_MAX_ESCALATION, default 3).",
		Do:   "Handle the case at its level (assign or resolve it); it cannot be escalated further.",
	},
	InFlight: {
		When: "A create with an Idempotency-Key arrives while the first request with that key is still being processed.",
		Do:   "Wait (Retry-After) and send the same request again: it then answers with the first request's result.",
	},
	Gone: {
		When: "An MFA verify names a challenge that does not exist any more: it expired (GATEWAY_MFA_CHALLENGE_TTL, default 5 minutes), was already used, or was replaced by a newer challenge.",
		Do:   "Start a new challenge (POST /v1/sessions/{sessionId}/mfa/challenge), deliver its code, and verify with the new challengeId.",
	},
	PreconditionFailed: {
		When: "The If-Match ETag is not the resource's current one: someone changed it since you read it.",
		Do:   "Read the resource again (GET returns its ETag), reapply your change to what you read, and send it with the new ETag.",
	},
	PayloadTooLarge: {
		When: "The request body is larger than the gateway accepts (GATEWAY_BODY_LIMIT_BYTES, default 64 KiB).",
		Do:   "Send a smaller body; no operation of the contract needs one this large.",
	},
	UnsupportedMediaType: {
		When: "The body's Content-Type is not one the operation takes, e.g. application/json on a PATCH that takes application/merge-patch+json. The detail names the types it takes (a PATCH also lists them in Accept-Patch).",
		Do:   "Send the body with a Content-Type the detail names.",
	},
	Unprocessable: {
		When: "The request is well-formed and matches the contract, but a rule of the domain refuses it, e.g. a currency that is not an ISO 4217 code, or a case due more than a year in the past.",
		Do:   "Change the value the detail names; retrying unchanged fails the same way.",
	},
	BoundExceeded: {
		When: "The write would take an object past its declared bounds: too many line items in a quote, an item too large, an amount past 2^53-1 minor units.",
		Do:   "Keep the object within the bound the detail names (e.g. split a quote).",
	},
	WrongCode: {
		When: "An MFA verify sent a code that does not match its challenge. The attemptsLeft member says how many tries remain in the window.",
		Do:   "Ask the user for the code again and verify with the same challengeId; after the last attempt, the answer is rate-limited (429).",
	},
	IdempotencyMismatch: {
		When: "An Idempotency-Key that was already used with a different request (another body or path) within its lifetime (GATEWAY_IDEMPOTENCY_TTL).",
		Do:   "Use a new key for a new request; reuse a key only to retry exactly the same request.",
	},
	PreconditionRequired: {
		When: "A write to a quote (PATCH, item PUT or DELETE, submit) was sent without If-Match.",
		Do:   "Read the resource (GET returns its ETag) and send the write with If-Match set to that ETag.",
	},
	RateLimited: {
		When: "Too many requests: the request rate of the token, tenant or session, or the MFA attempts of a user, passed its limit. RateLimit and RateLimit-Policy headers describe the limits.",
		Do:   "Wait the Retry-After seconds before sending again.",
	},
	Internal: {
		When: "An unexpected failure in the gateway. The detail is left out on purpose; the requestId is in the gateway's logs with the cause.",
		Do:   "Retry later; if it persists, report the requestId to the gateway's operators.",
	},
	Unavailable: {
		When: "Redis cannot serve right now: unreachable, busy, failing over, moving data between cluster nodes, or a write that ends a credential could not be confirmed on a replica.",
		Do:   "Wait the Retry-After seconds. A read can simply be sent again; for a write the outcome is unknown (Redis may still apply it), so retry it the safe way docs/ERRORS.md gives per operation: a create with the same Idempotency-Key, a quote write with its If-Match, a revocation or delete as is.",
	},
	MalformedRequest: {
		When: "The request is not well-formed HTTP/1.1: a malformed request line or header field, a missing or bad Host, conflicting Content-Length headers.",
		Do:   "Fix the client or proxy that produced the request.",
	},
	ExpectationFailed: {
		When: "The request carries an Expect header other than 100-continue.",
		Do:   "Send Expect: 100-continue or no Expect header.",
	},
	HeaderTooLarge: {
		When: "The request line and header fields together exceed the gateway's limit; the detail names it.",
		Do:   "Send fewer or smaller headers (often: too many cookies for this host).",
	},
	UnsupportedTransferCoding: {
		When: "The request uses a Transfer-Encoding other than chunked.",
		Do:   "Send the body with Content-Length, or chunked.",
	},
	HTTPVersionNotSupported: {
		When: "The request names an HTTP version the gateway does not speak.",
		Do:   "Send HTTP/1.1 (or HTTP/1.0).",
	},
	MFARequired: {
		When: "The session was created with mfaRequired and its MFA has not been verified yet: the user is not logged in, at any level.",
		Do:   "Complete the login: the service asks POST /v1/sessions/{sessionId}/mfa/challenge, delivers the code out of band, and verifies it (POST .../mfa/verify); the session token verify returns works.",
	},
	SessionLimit: {
		When: "A login for a user who already has the maximum number of live sessions (GATEWAY_SESSION_MAX_PER_USER) when the policy is refuse.",
		Do:   "End one of the user's sessions (DELETE /v1/session/devices/{sessionId}, or DELETE /v1/users/{userId}/sessions) and log in again.",
	},
	QuotaExceeded: {
		When: "A create would take the tenant past a quota on live objects (tokens, quotes, cases or Idempotency-Key markers, GATEWAY_TENANT_MAX_*); the problem names the quota and its limit. Nothing was written.",
		Do:   "Delete or let expire objects the tenant no longer needs, or ask the operators for a larger quota; Retry-After says when one frees at the earliest.",
	},
}
