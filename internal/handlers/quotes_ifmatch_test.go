package handlers

import (
	"testing"
)

// TestQuoteIfMatchStar: If-Match: * matches whatever version is current (RFC 9110 §13.1.1) on
// every quote write that requires If-Match, on every backend; it still answers 404 for a quote
// that does not exist (or is another tenant's), and no If-Match at all is still 428.
func TestQuoteIfMatchStar(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write")
		q := createQuote(t, h, auth)
		path := "/v1/quotes/" + q.QuoteId
		item := map[string]any{"sku": "S-1", "quantity": 2, "unitPriceMinor": 500}
		star := []string{"Authorization", auth, "If-Match", "*"}

		rec := h.do("PUT", path+"/items/a", item, star...)
		wantStatus(t, rec, 200)
		if got := rec.Header().Get("ETag"); got != `"2"` {
			t.Fatalf("PUT item: ETag %q, want \"2\"", got)
		}
		rec = h.do("PUT", path+"/items/b", item, star...)
		wantStatus(t, rec, 200)
		rec = h.do("DELETE", path+"/items/b", nil, star...)
		wantStatus(t, rec, 200)
		rec = h.do("PATCH", path, `{"taxMinor":7}`, append(star, "Content-Type", mergePatch)...)
		wantStatus(t, rec, 200)
		var got quoteJSON
		decode(t, rec, &got)
		if got.StateVersion != 5 || got.TaxMinor != 7 || got.TotalMinor != 1007 {
			t.Fatalf("PATCH: %+v", got)
		}
		rec = h.do("POST", path+"/submit", nil, star...)
		wantStatus(t, rec, 200)
		decode(t, rec, &got)
		if got.Status != "SUBMITTED" || rec.Header().Get("ETag") != `"6"` {
			t.Fatalf("submit: %+v %v", got, rec.Header())
		}
		// A submitted quote is still refused for its status, not matched away.
		wantProblem(t, h.do("POST", path+"/submit", nil, star...), 409, "invalid-status")
		// No If-Match at all is still 428.
		wantProblem(t, h.do("POST", path+"/submit", nil, "Authorization", auth), 428, "precondition-required")

		// * never matches a quote that does not exist, nor another tenant's.
		other := h.bearer("globex", "quotes:read", "quotes:write")
		otherQ := createQuote(t, h, other)
		for _, p := range []string{"/v1/quotes/q_00000000000000000000000000", "/v1/quotes/" + otherQ.QuoteId} {
			wantProblem(t, h.do("PATCH", p, `{"taxMinor":1}`, append(star, "Content-Type", mergePatch)...), 404, "not-found")
			wantProblem(t, h.do("PUT", p+"/items/a", item, star...), 404, "not-found")
			wantProblem(t, h.do("DELETE", p+"/items/a", nil, star...), 404, "not-found")
			wantProblem(t, h.do("POST", p+"/submit", nil, star...), 404, "not-found")
		}
		// The other tenant's quote is untouched.
		rec = h.do("GET", "/v1/quotes/"+otherQ.QuoteId, nil, "Authorization", other)
		wantStatus(t, rec, 200)
		if rec.Header().Get("ETag") != `"1"` {
			t.Fatalf("other tenant's quote changed: %v", rec.Header())
		}
	})
}
