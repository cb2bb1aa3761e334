package handlers

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestOtherTenantsIDAnswersLikeAnUnknownOne: for every operation that takes an id, a caller of
// tenant acme gets the same answer — status, body (but requestId and instance) and headers
// (but the request id, length and rate-limit counters) — for an id of tenant globex's and for
// an unknown id of the same shape, so no answer tells that an id exists elsewhere. Afterwards
// globex's objects are as they were. Every backend.
func TestOtherTenantsIDAnswersLikeAnUnknownOne(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b, nil)
			// globex's objects.
			gAdmin := h.bearer("globex", auth.KnownScopes()...)
			tok := mustIssueToken(t, h, gAdmin, tokenRequest(3600, auth.ScopeTokensRead))
			sess := h.createSession("globex", "bob", nil)
			rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", gAdmin)
			wantStatus(t, rec, 201)
			var q quoteJSON
			decode(t, rec, &q)
			wantStatus(t, h.do("PUT", "/v1/quotes/"+q.QuoteId+"/items/a", map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": 5},
				"Authorization", gAdmin, "If-Match", `"1"`), 200)
			rec = h.do("POST", "/v1/cases", map[string]any{"subjectRef": "order-1", "assignedTeam": "ops",
				"dueAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "reason": "late"}, "Authorization", gAdmin)
			wantStatus(t, rec, 201)
			var c Case
			decode(t, rec, &c)
			before := globexState(t, h, gAdmin, tok.TokenId, sess.SessionId, q.QuoteId, c.CaseId)

			admin := h.bearer("acme", auth.KnownScopes()...)
			own := h.createSession("acme", "alice", nil)
			ops := []struct {
				name, method, path string
				id                 string // replaced in path; its unknown twin differs in the last character
				body               any
				headers            []string
			}{
				{"get token", "GET", "/v1/tokens/{}", tok.TokenId, nil, nil},
				{"revoke token", "DELETE", "/v1/tokens/{}?reason=x", tok.TokenId, nil, nil},
				{"get session", "GET", "/v1/sessions/{}", sess.SessionId, nil, nil},
				{"rotate session", "POST", "/v1/sessions/{}/rotate", sess.SessionId, nil, nil},
				{"mfa challenge", "POST", "/v1/sessions/{}/mfa/challenge", sess.SessionId, nil, nil},
				{"mfa verify", "POST", "/v1/sessions/{}/mfa/verify", sess.SessionId, map[string]any{"challengeId": strings.Repeat("A", 22), "code": "123456"}, nil},
				{"revoke session", "DELETE", "/v1/sessions/{}", sess.SessionId, nil, nil},
				{"list user sessions", "GET", "/v1/users/{}/sessions", "bob", nil, nil},
				{"revoke user sessions except", "DELETE", "/v1/users/alice/sessions?except={}", sess.SessionId, nil, nil},
				{"revoke user sessions", "DELETE", "/v1/users/{}/sessions", "bob", nil, nil},
				{"revoke own device", "DELETE", "/v1/session/devices/{}", sess.SessionId, nil, []string{"X-Session-Token", own.Token}},
				{"get quote", "GET", "/v1/quotes/{}", q.QuoteId, nil, nil},
				{"patch quote", "PATCH", "/v1/quotes/{}", q.QuoteId, `{"taxMinor":1}`, []string{"Content-Type", mergePatch, "If-Match", `"2"`}},
				{"patch quote star", "PATCH", "/v1/quotes/{}", q.QuoteId, `{"taxMinor":1}`, []string{"Content-Type", mergePatch, "If-Match", "*"}},
				{"list items", "GET", "/v1/quotes/{}/items", q.QuoteId, nil, nil},
				{"put item", "PUT", "/v1/quotes/{}/items/b", q.QuoteId, map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": 5}, []string{"If-Match", `"2"`}},
				{"delete item", "DELETE", "/v1/quotes/{}/items/a", q.QuoteId, nil, []string{"If-Match", `"2"`}},
				{"submit quote", "POST", "/v1/quotes/{}/submit", q.QuoteId, nil, []string{"If-Match", `"2"`}},
				{"delete quote", "DELETE", "/v1/quotes/{}", q.QuoteId, nil, nil},
				{"get case", "GET", "/v1/cases/{}", c.CaseId, nil, nil},
				{"escalate case", "POST", "/v1/cases/{}/escalate", c.CaseId, map[string]any{"reason": "x"}, []string{"If-Match", `"1"`}},
				{"assign case", "POST", "/v1/cases/{}/assign", c.CaseId, map[string]any{"assignedTeam": "t2"}, nil},
				{"resolve case", "POST", "/v1/cases/{}/resolve", c.CaseId, map[string]any{"reason": "x"}, nil},
				{"reopen case", "POST", "/v1/cases/{}/reopen", c.CaseId, map[string]any{"reason": "x"}, nil},
				{"case history", "GET", "/v1/cases/{}/history", c.CaseId, nil, nil},
			}
			for _, op := range ops {
				twin := op.id[:len(op.id)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(op.id, "a")]
				if op.id == "bob" {
					twin = "nobody"
				}
				send := func(id string) *httptest.ResponseRecorder {
					hdr := append([]string{"Authorization", admin}, op.headers...)
					if len(op.headers) > 0 && op.headers[0] == "X-Session-Token" {
						hdr = op.headers
					}
					return h.do(op.method, strings.Replace(op.path, "{}", id, 1), op.body, hdr...)
				}
				other, unknown := send(op.id), send(twin)
				if other.Code != unknown.Code {
					t.Errorf("%s: another tenant's id answers %d, an unknown one %d\n%s\n%s", op.name, other.Code, unknown.Code, other.Body, unknown.Body)
					continue
				}
				if a, b := comparableBody(t, other), comparableBody(t, unknown); !reflect.DeepEqual(a, b) {
					t.Errorf("%s: bodies differ:\n%v\n%v", op.name, a, b)
				}
				if a, b := comparableHeaders(other), comparableHeaders(unknown); !reflect.DeepEqual(a, b) {
					t.Errorf("%s: headers differ:\n%v\n%v", op.name, a, b)
				}
			}
			if after := globexState(t, h, gAdmin, tok.TokenId, sess.SessionId, q.QuoteId, c.CaseId); !reflect.DeepEqual(before, after) {
				t.Errorf("globex's objects changed:\n%v\n%v", before, after)
			}
		})
	}
}

// comparableBody is the JSON body without the per-request members.
func comparableBody(t *testing.T, rec *httptest.ResponseRecorder) any {
	t.Helper()
	if rec.Body.Len() == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		return rec.Body.String()
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "requestId")
		delete(m, "instance")
	}
	return v
}

// comparableHeaders are the response headers but the per-request ones.
func comparableHeaders(rec *httptest.ResponseRecorder) []string {
	var out []string
	for k, vs := range rec.Header() {
		switch k {
		case "X-Request-Id", "Content-Length", "Ratelimit", "Ratelimit-Policy", "Date":
			continue
		}
		out = append(out, k+": "+strings.Join(vs, ", "))
	}
	sort.Strings(out)
	return out
}

var idleExpiry = regexp.MustCompile(`"idleExpiresAt":"[^"]*"`)

// globexState is what globex sees of its objects (bodies and ETags).
func globexState(t *testing.T, h *harness, gAdmin, tokenID, sessionID, quoteID, caseID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{"/v1/tokens/" + tokenID, "/v1/sessions/" + sessionID, "/v1/quotes/" + quoteID,
		"/v1/quotes/" + quoteID + "/items", "/v1/cases/" + caseID, "/v1/cases/" + caseID + "/history", "/v1/users/bob/sessions"} {
		rec := h.do("GET", p, nil, "Authorization", gAdmin)
		// idleExpiresAt is read as now + PTTL: it moves by a millisecond between two reads.
		body := idleExpiry.ReplaceAllString(rec.Body.String(), `"idleExpiresAt":"…"`)
		out[p] = rec.Result().Status + " " + rec.Header().Get("ETag") + " " + body
	}
	return out
}
