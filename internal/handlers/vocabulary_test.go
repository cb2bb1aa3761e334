package handlers

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// millis is the one timestamp shape of every response: UTC with exactly three fractional digits.
var millis = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// looksLikeTime matches any RFC 3339 date-time, whatever its precision or offset: a string
// value of that shape is a timestamp even where the spec forgot to say so.
var looksLikeTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`)

// retiredNames are member names the contract no longer speaks: the one vocabulary is
// tenantId (not tenant), device.label (not deviceLabel), and the storage's schemaVersion stays
// in Redis.
var retiredNames = map[string]string{
	"tenant":        "tenantId",
	"deviceLabel":   "device.label",
	"schemaVersion": "nothing (a storage detail)",
}

// notGenerated are in the contract but not in the embedded spec (oapi-codegen.yaml excludes
// them): the HTML reference.
var notGenerated = map[string]bool{"/docs": true, "/docs/{asset}": true}

// vocabularyWalk drives every operation of the spec to a success on one gateway and checks each
// JSON answer against the operation's response schema: no member the schema does not declare,
// every required member present, every date-time with exactly milliseconds (and every string
// that looks like a timestamp too), no retired name, no empty fromStatus.
type vocabularyWalk struct {
	t    *testing.T
	h    *harness
	spec *openapi3.T
	seen map[string]bool // "METHOD /template" answered 2xx
}

func (w *vocabularyWalk) call(method, tmpl, url string, body any, headers ...string) *httptest.ResponseRecorder {
	w.t.Helper()
	rec := w.h.do(method, url, body, headers...)
	if rec.Code < 200 || rec.Code > 299 {
		w.t.Fatalf("%s %s: %d %s", method, url, rec.Code, rec.Body)
	}
	w.seen[method+" "+tmpl] = true
	if notGenerated[tmpl] {
		return rec
	}
	item := w.spec.Paths.Value(tmpl)
	if item == nil || item.GetOperation(method) == nil {
		w.t.Fatalf("%s %s is not in the spec", method, tmpl)
	}
	op := item.GetOperation(method)
	resp := op.Responses.Status(rec.Code)
	if resp == nil || resp.Value == nil {
		w.t.Fatalf("%s %s: status %d is not in the spec", method, tmpl, rec.Code)
	}
	mt := resp.Value.Content.Get("application/json")
	if mt == nil || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		return rec
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(rec.Body.String()))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		w.t.Fatalf("%s %s: %v: %s", method, url, err, rec.Body)
	}
	for _, p := range walkSchema(mt.Schema.Value, v, "") {
		w.t.Errorf("%s %s: %s\n%s", method, tmpl, p, rec.Body)
	}
	return rec
}

// walkSchema lists where v departs from s.
func walkSchema(s *openapi3.Schema, v any, at string) []string {
	var out []string
	for _, sub := range s.AllOf {
		out = append(out, walkSchema(sub.Value, v, at)...)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				out = append(out, fmt.Sprintf("%s: required member %q missing", at, r))
			}
		}
		open := s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has || s.AdditionalProperties.Schema != nil
		for name, mv := range x {
			if instead, ok := retiredNames[name]; ok {
				out = append(out, fmt.Sprintf("%s/%s: retired name, the contract says %s", at, name, instead))
			}
			if name == "fromStatus" && mv == "" {
				out = append(out, fmt.Sprintf("%s/fromStatus: empty string (omit it)", at))
			}
			switch p := s.Properties[name]; {
			case p != nil:
				out = append(out, walkSchema(p.Value, mv, at+"/"+name)...)
			case s.AdditionalProperties.Schema != nil:
				out = append(out, walkSchema(s.AdditionalProperties.Schema.Value, mv, at+"/"+name)...)
			case !open && len(s.AllOf) == 0:
				out = append(out, fmt.Sprintf("%s/%s: not in the schema", at, name))
			}
		}
	case []any:
		for i, e := range x {
			if s.Items != nil {
				out = append(out, walkSchema(s.Items.Value, e, at+"/"+strconv.Itoa(i))...)
			}
		}
	case string:
		if (s.Format == "date-time" || looksLikeTime.MatchString(x)) && !millis.MatchString(x) {
			out = append(out, fmt.Sprintf("%s: %q is not UTC with exactly milliseconds", at, x))
		}
	}
	return out
}

// TestEveryResponseSpeaksOneVocabulary walks the answers of every operation: timestamps always
// carry exactly milliseconds (`2026-11-26T15:04:05.070Z`), names are the contract's (tenantId,
// device.label; no schemaVersion), a case's create entry has no fromStatus, and nothing is
// answered that the response schema does not declare.
func TestEveryResponseSpeaksOneVocabulary(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	w := &vocabularyWalk{t: t, h: h, spec: spec, seen: map[string]bool{}}
	bearer := h.bearer("acme", allScopes...)
	auth := []string{"Authorization", bearer}

	// Meta: every GET of the spec outside /v1, its parameter (if any) filled from fill, and the
	// API reference, whose page and files the generated server does not hold.
	page := w.call("GET", "/docs", "/docs", nil)
	asset := regexp.MustCompile(`src="docs/([^"]+)"`).FindStringSubmatch(page.Body.String())
	if asset == nil {
		t.Fatalf("the docs page references no file:\n%s", page.Body)
	}
	w.call("GET", "/docs/{asset}", "/docs/"+asset[1], nil)
	fill := map[string]string{"{asset}": asset[1], "{slug}": "validation"}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, path := range spec.Paths.InMatchingOrder() {
		if strings.HasPrefix(path, "/v1/") || spec.Paths.Value(path).Get == nil {
			continue
		}
		url := param.ReplaceAllStringFunc(path, func(p string) string {
			if v, ok := fill[p]; ok {
				return v
			}
			t.Fatalf("GET %s: the walk has no value for %s (add one to fill)", path, p)
			return ""
		})
		w.call("GET", path, url, nil)
	}

	// Sessions: service operations.
	var s1, s2, s3, s4 SessionToken
	for _, s := range []*SessionToken{&s1, &s2, &s3} {
		rec := w.call("POST", "/v1/sessions", "/v1/sessions", map[string]any{"userId": "alice", "authLevel": "BASIC",
			"device": map[string]any{"label": "Alice's laptop", "userAgent": "curl/8", "ip": "192.0.2.7"}}, auth...)
		decode(t, rec, s)
	}
	rec := w.call("GET", "/v1/sessions/{sessionId}", "/v1/sessions/"+s1.SessionId, nil, auth...)
	var view map[string]any
	decode(t, rec, &view)
	if d, _ := view["device"].(map[string]any); d == nil || d["label"] != "Alice's laptop" {
		t.Errorf("the view does not answer the request's device.label at the same place: %s", rec.Body)
	}
	w.call("PUT", "/v1/sessions/{sessionId}/groups", "/v1/sessions/"+s1.SessionId+"/groups", map[string]any{"groups": []string{"staff"}}, auth...)
	var rot SessionToken
	decode(t, w.call("POST", "/v1/sessions/{sessionId}/rotate", "/v1/sessions/"+s1.SessionId+"/rotate", nil, auth...), &rot)
	var ch MfaChallenge
	decode(t, w.call("POST", "/v1/sessions/{sessionId}/mfa/challenge", "/v1/sessions/"+rot.SessionId+"/mfa/challenge", nil, auth...), &ch)
	var up MfaVerified
	decode(t, w.call("POST", "/v1/sessions/{sessionId}/mfa/verify", "/v1/sessions/"+rot.SessionId+"/mfa/verify",
		map[string]string{"challengeId": ch.ChallengeId, "code": ch.Code}, auth...), &up)
	w.call("GET", "/v1/users/{userId}/sessions", "/v1/users/alice/sessions", nil, auth...)

	// Sessions: the end user's own.
	me := []string{"X-Session-Token", up.Token}
	w.call("GET", "/v1/session", "/v1/session", nil, me...)
	w.call("GET", "/v1/session/devices", "/v1/session/devices", nil, me...)
	w.call("GET", "/v1/authorize", "/v1/authorize", nil, me...)
	w.call("GET", "/v1/authorize", "/v1/authorize", nil, auth...)
	w.call("DELETE", "/v1/session/devices/{sessionId}", "/v1/session/devices/"+s2.SessionId, nil, me...)
	w.call("DELETE", "/v1/session/devices", "/v1/session/devices", nil, me...)
	w.call("DELETE", "/v1/session", "/v1/session", nil, me...)
	w.call("DELETE", "/v1/sessions/{sessionId}", "/v1/sessions/"+s3.SessionId, nil, auth...)
	decode(t, w.call("POST", "/v1/sessions", "/v1/sessions", map[string]any{"userId": "bob", "authLevel": "BASIC"}, auth...), &s4)
	w.call("DELETE", "/v1/users/{userId}/sessions", "/v1/users/bob/sessions", nil, auth...)

	// Tokens.
	var tok TokenIssued
	decode(t, w.call("POST", "/v1/tokens", "/v1/tokens", map[string]any{"subject": "svc-walk", "scopes": []string{"quotes:read"},
		"ttlSeconds": 3600, "tokenType": "service"}, auth...), &tok)
	w.call("GET", "/v1/tokens", "/v1/tokens", nil, auth...)
	w.call("GET", "/v1/tokens/{tokenId}", "/v1/tokens/"+tok.TokenId, nil, auth...)
	rec = w.call("POST", "/v1/tokens/introspect", "/v1/tokens/introspect", map[string]any{"token": tok.Token}, auth...)
	if !strings.Contains(rec.Body.String(), `"tenantId":"acme"`) {
		t.Errorf("introspection does not name the tenant as tenantId: %s", rec.Body)
	}
	w.call("DELETE", "/v1/tokens/{tokenId}", "/v1/tokens/"+tok.TokenId, nil, auth...)
	w.call("GET", "/v1/tokens/{tokenId}", "/v1/tokens/"+tok.TokenId, nil, auth...) // with revokedAt

	// Events.
	w.call("GET", "/v1/events", "/v1/events?type=token.issued", nil, auth...)
	w.call("GET", "/v1/events/stream", "/v1/events/stream", nil, auth...)

	// Quotes.
	rec = w.call("POST", "/v1/quotes", "/v1/quotes", quoteBody, auth...)
	var q quoteJSON
	decode(t, rec, &q)
	qp := "/v1/quotes/" + q.QuoteId
	etag := func(rec *httptest.ResponseRecorder) string { return rec.Header().Get("ETag") }
	tag := etag(w.call("GET", "/v1/quotes/{quoteId}", qp, nil, auth...))
	item := map[string]any{"sku": "sku-1", "quantity": 2, "unitPriceMinor": 1250}
	tag = etag(w.call("PUT", "/v1/quotes/{quoteId}/items/{itemId}", qp+"/items/a", item, append(auth, "If-Match", tag)...))
	tag = etag(w.call("PUT", "/v1/quotes/{quoteId}/items/{itemId}", qp+"/items/b", item, append(auth, "If-Match", tag)...))
	w.call("GET", "/v1/quotes/{quoteId}/items", qp+"/items", nil, auth...)
	tag = etag(w.call("PATCH", "/v1/quotes/{quoteId}", qp, map[string]any{"taxMinor": 100},
		append(auth, "Content-Type", mergePatch, "If-Match", tag)...))
	tag = etag(w.call("DELETE", "/v1/quotes/{quoteId}/items/{itemId}", qp+"/items/b", nil, append(auth, "If-Match", tag)...))
	w.call("POST", "/v1/quotes/{quoteId}/submit", qp+"/submit", nil, append(auth, "If-Match", tag)...)
	w.call("GET", "/v1/quotes", "/v1/quotes?status=SUBMITTED&limit=1", nil, auth...)
	w.call("DELETE", "/v1/quotes/{quoteId}", qp, nil, auth...)

	// Cases.
	var c struct{ CaseId string }
	decode(t, w.call("POST", "/v1/cases", "/v1/cases", caseBody(time.Now().Add(time.Hour)), auth...), &c)
	cp := "/v1/cases/" + c.CaseId
	w.call("GET", "/v1/cases/{caseId}", cp, nil, auth...)
	w.call("POST", "/v1/cases/{caseId}/escalate", cp+"/escalate", map[string]any{"reason": "customer waiting"}, auth...)
	w.call("POST", "/v1/cases/{caseId}/assign", cp+"/assign", map[string]any{"assignedTeam": "tier2"}, auth...)
	w.call("POST", "/v1/cases/{caseId}/resolve", cp+"/resolve", map[string]any{"reason": "refunded"}, auth...)
	w.call("POST", "/v1/cases/{caseId}/reopen", cp+"/reopen", map[string]any{"reason": "not fixed"}, auth...)
	w.call("GET", "/v1/cases", "/v1/cases?status=OPEN&status=ESCALATED&assignee=me&order=due&limit=1", nil, auth...)
	rec = w.call("GET", "/v1/cases/{caseId}/history", cp+"/history", nil, auth...)
	var hist struct{ Items []map[string]any }
	decode(t, rec, &hist)
	if n := len(hist.Items); n == 0 || hist.Items[n-1]["transition"] != "create" {
		t.Fatalf("history without its create entry last: %s", rec.Body)
	} else if _, ok := hist.Items[n-1]["fromStatus"]; ok {
		t.Errorf("the create entry has a fromStatus: %v", hist.Items[n-1])
	}

	// Webhooks (the ping's receiver is refused at dial: localhost is loopback).
	var wh struct{ WebhookId string }
	decode(t, w.call("POST", "/v1/webhooks", "/v1/webhooks", map[string]any{"url": "http://localhost:1/hook", "events": []string{"*"}}, auth...), &wh)
	wp := "/v1/webhooks/" + wh.WebhookId
	w.call("GET", "/v1/webhooks", "/v1/webhooks", nil, auth...)
	w.call("GET", "/v1/webhooks/{webhookId}", wp, nil, auth...)
	w.call("POST", "/v1/webhooks/{webhookId}/ping", wp+"/ping", nil, auth...)
	w.call("GET", "/v1/webhooks/{webhookId}/deliveries", wp+"/deliveries", nil, auth...)
	w.call("DELETE", "/v1/webhooks/{webhookId}", wp, nil, auth...)

	// Every operation of the contract was answered (and walked).
	var missing []string
	for path, it := range spec.Paths.Map() {
		for method := range it.Operations() {
			if !w.seen[method+" "+path] {
				missing = append(missing, method+" "+path)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("operations the walk did not reach: %v", missing)
	}
	if len(w.seen) < 30 { // a floor against a spec that failed to load its paths
		t.Errorf("walked %d operations", len(w.seen))
	}
}

// TestIfMatchRequiredWhereMissingIsRefused: wherever the server answers 428 without If-Match,
// the spec says the header is required, so the generated client's signature says so too (its
// params field is a string, not a pointer: client/example_test.go uses it), and the gateway
// still answers 428, not the validator's 400.
func TestIfMatchRequiredWhereMissingIsRefused(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Responses.Status(428) == nil {
				continue
			}
			n++
			var p *openapi3.Parameter
			for _, ref := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if ref.Value.In == openapi3.ParameterInHeader && strings.EqualFold(ref.Value.Name, "If-Match") {
					p = ref.Value
				}
			}
			if p == nil || !p.Required {
				t.Errorf("%s %s answers 428 but its If-Match is not required in the spec", method, path)
			}
		}
	}
	if n < 4 {
		t.Fatalf("%d operations answer 428", n)
	}
	h := embedded(t)
	auth := h.bearer("acme", allScopes...)
	q := createQuote(t, h, auth)
	qp := "/v1/quotes/" + q.QuoteId
	item := map[string]any{"sku": "sku-1", "quantity": 1, "unitPriceMinor": 1}
	for _, r := range []struct {
		method, path string
		body         any
		headers      []string
	}{
		{"PATCH", qp, map[string]any{"taxMinor": 1}, []string{"Content-Type", mergePatch}},
		{"PUT", qp + "/items/a", item, nil},
		{"DELETE", qp + "/items/a", nil, nil},
		{"POST", qp + "/submit", nil, nil},
		{"POST", qp + "/submit", nil, []string{"If-Match", ""}},
	} {
		p := wantProblem(t, h.do(r.method, r.path, r.body, append([]string{"Authorization", auth}, r.headers...)...), 428, "precondition-required")
		if !strings.Contains(p.Detail, "If-Match") {
			t.Errorf("%s %s: the 428 does not name If-Match: %q", r.method, r.path, p.Detail)
		}
	}
}
