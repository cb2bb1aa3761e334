package handlers

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// objectEvents are the tenant's events of one subject, through GET /v1/events.
func objectEvents(t *testing.T, h *harness, auth, subject string) []Event {
	t.Helper()
	var page EventPage
	rec := h.do("GET", "/v1/events?subject="+url.QueryEscape(subject), nil, "Authorization", auth)
	wantStatus(t, rec, 200)
	decode(t, rec, &page)
	return page.Items
}

// wantTypes checks the events' types, in order, and that each carries the request id and a
// token actor.
func wantTypes(t *testing.T, got []Event, reqID string, types ...string) {
	t.Helper()
	if len(got) != len(types) {
		t.Fatalf("%d events %+v, want %v", len(got), got, types)
	}
	for i, e := range got {
		if string(e.Type) != types[i] || e.RequestId == nil || *e.RequestId != reqID || !strings.HasPrefix(e.Actor, "token:") {
			t.Fatalf("event %d = %s (request %v, actor %s), want %s of request %s", i, e.Type, e.RequestId, e.Actor, types[i], reqID)
		}
	}
}

// TestQuoteAndCaseEventsOverHTTP: a quote's and a case's changes over HTTP write their events
// with the request's id and the caller as actor; an Idempotency-Key replay, a stale If-Match
// and an invalid transition write none.
func TestQuoteAndCaseEventsOverHTTP(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write", "cases:read", "cases:write", "events:read")
		rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth, "Idempotency-Key", "evq-0001", "X-Request-Id", "rq-1")
		wantStatus(t, rec, 201)
		var q quoteJSON
		decode(t, rec, &q)
		wantStatus(t, h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth, "Idempotency-Key", "evq-0001", "X-Request-Id", "rq-1"), 201)
		patch := map[string]any{"taxMinor": 5}
		wantProblem(t, h.do("PATCH", "/v1/quotes/"+q.QuoteId, patch, "Authorization", auth, "If-Match", `"7"`, "Content-Type", mergePatch, "X-Request-Id", "rq-1"),
			412, "precondition-failed")
		wantTypes(t, objectEvents(t, h, auth, q.QuoteId), "rq-1", "quote.created")

		// One body for both posts: two calls of caseBody a second apart differ in dueAt.
		body := caseBody(time.Now().Add(time.Hour))
		rec = h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", "evc-0001", "X-Request-Id", "rq-2")
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		wantStatus(t, h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", "evc-0001", "X-Request-Id", "rq-2"), 201)
		reason := map[string]any{"reason": "why"}
		if rec := h.do("POST", "/v1/cases/"+c.CaseId+"/reopen", reason, "Authorization", auth, "X-Request-Id", "rq-2"); rec.Code < 400 {
			t.Fatalf("reopen of an open case: %d %s", rec.Code, rec.Body)
		}
		wantStatus(t, h.do("POST", "/v1/cases/"+c.CaseId+"/escalate", reason, "Authorization", auth, "X-Request-Id", "rq-2"), 200)
		wantTypes(t, objectEvents(t, h, auth, c.CaseId), "rq-2", "case.created", "case.escalated")
	})
}
