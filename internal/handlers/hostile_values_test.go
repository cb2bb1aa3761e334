package handlers

import (
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// The valid values the hostile-input test starts from: path parameters, query parameters and
// request bodies that each operation accepts, which its cases then break one at a time.

// pathValue is the fixture value of a path parameter.
func (env *hostileEnv) pathValue(name string) string {
	switch name {
	case "sessionId":
		return string(env.device.SessionId)
	case "userId":
		return "alice"
	case "tokenId":
		return env.tokenID
	case "quoteId":
		return env.quoteID
	case "itemId":
		return "a"
	case "caseId":
		return env.caseID
	case "webhookId":
		return env.webhookID
	}
	panic("hostile: no fixture for path parameter " + name)
}

// twoValid are two values a query or header parameter accepts on its own (for duplicates).
func (env *hostileEnv) twoValid(name string) (string, string) {
	switch name {
	case "limit":
		return "1", "2"
	case "cursor":
		return "abc", "def"
	case "reason":
		return "a", "b"
	case "except":
		return string(env.device.SessionId), string(env.session.SessionId)
	case "level":
		return "BASIC", "MFA"
	case "If-Match":
		return `"1"`, `"2"`
	case "Idempotency-Key":
		return "hostile-key-1", "hostile-key-2"
	case "customerId":
		return "cust-1", "cust-2"
	case "salesChannel":
		return "web", "partner"
	case "updatedSince":
		return "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
	case "assignedTeam":
		return "ops", "billing"
	case "assignee":
		return "ana", "me"
	case "escalationLevel":
		return "1", "2"
	case "overdue":
		return "true", "false"
	case "subjectRef":
		return "order/1", "order/2"
	case "order":
		return "due", "updated"
	case "status": // an array: repeating it is no duplicate (the case below leaves it out)
		return "DRAFT", "SUBMITTED"
	case "type":
		return "token.issued", "token.revoked"
	case "subject":
		return "a", "b"
	case "after", "Last-Event-ID":
		return "1-0", "2-0"
	}
	panic("hostile: no valid values for parameter " + name)
}

// baseBody is a valid body for each operation with a request body: the request would succeed
// (and write) if a mutation of it were ignored.
func (env *hostileEnv) baseBody(opID string) jobject {
	switch opID {
	case "createSession":
		return jobject{{"userId", "mallory"}, {"authLevel", "BASIC"}, {"mfaRequired", false},
			{"device", jobject{{"label", "laptop"}, {"userAgent", "curl/8"}, {"ip", "10.0.0.1"}}},
			{"idleTimeoutSeconds", 600}, {"absoluteTimeoutSeconds", 3600}, {"groups", []string{"staff"}}}
	case "setSessionGroups":
		return jobject{{"groups", []string{"staff", "ops"}}}
	case "verifyMfa":
		return jobject{{"challengeId", env.challenge.ChallengeId}, {"code", env.challenge.Code}}
	case "issueToken":
		return jobject{{"subject", "svc-x"}, {"scopes", []string{"quotes:read"}}, {"ttlSeconds", 3600},
			{"tokenType", "service"}, {"description", "d"}}
	case "introspectToken":
		return jobject{{"token", strings.TrimPrefix(env.bearer, "Bearer ")}, {"token_type_hint", "access_token"}}
	case "createQuote":
		return jobject{{"customerId", "cust-1"}, {"salesChannel", "web"}, {"currency", "EUR"}}
	case "patchQuote":
		return jobject{{"customerId", "cust-2"}, {"salesChannel", "shop"}, {"discountMinor", 1}, {"taxMinor", 2}}
	case "putQuoteItem":
		return jobject{{"sku", "SKU-9"}, {"quantity", 2}, {"unitPriceMinor", 100}, {"description", "d"}}
	case "createCase":
		return jobject{{"subjectRef", "order/1"}, {"assignedTeam", "ops"},
			{"dueAt", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, {"reason", "late"}}
	case "escalateCase", "resolveCase", "reopenCase":
		return jobject{{"reason", "r"}}
	case "assignCase":
		return jobject{{"assignedTeam", "billing"}, {"reason", "r"}}
	case "createWebhook":
		return jobject{{"url", "http://localhost:1/hook"}, {"events", []string{"session.revoked", "token.*"}}}
	}
	return nil
}

// --- the matrix ------------------------------------------------------------------------------

// hostileOp is one operation with what a valid request needs.
type hostileOp struct {
	id, method, path string
	op               *openapi3.Operation
	params           openapi3.Parameters
	// body is the JSON request schema and bodyCT its media type ("" without a body).
	body   *openapi3.Schema
	bodyCT string
	form   bool
	// creds are the credential header sets the operation is tried with.
	creds [][]string
	// headers are the valid header parameters (If-Match).
	headers []string
}
