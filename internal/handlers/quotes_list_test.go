package handlers

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

type quotePageJSON struct {
	Items      []quoteJSON `json:"items"`
	NextCursor string      `json:"nextCursor"`
}

// listQuotes GETs path and decodes the page.
func listQuotes(t *testing.T, h *harness, auth, path string) (quotePageJSON, string) {
	t.Helper()
	rec := h.do("GET", path, nil, "Authorization", auth)
	wantStatus(t, rec, 200)
	var p quotePageJSON
	decode(t, rec, &p)
	if (p.NextCursor == "") != (rec.Header().Get("Link") == "") {
		t.Fatalf("%s: nextCursor %q but Link %q", path, p.NextCursor, rec.Header().Get("Link"))
	}
	return p, rec.Header().Get("Link")
}

// GET /v1/quotes end to end: filters, pages followed through Link, the tenant's own drafts
// only, nothing deleted, and the refusals (unknown filter, bad status, foreign cursor, scope).
func TestQuoteListHTTP(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write")
		var ids []string
		for i, c := range []string{"cust-a", "cust-a", "cust-b", "cust-a", "cust-c"} {
			rec := h.do("POST", "/v1/quotes", map[string]any{"customerId": c, "salesChannel": []string{"web", "partner"}[i%2], "currency": "EUR"}, "Authorization", auth)
			wantStatus(t, rec, 201)
			var q quoteJSON
			decode(t, rec, &q)
			ids = append(ids, q.QuoteId)
			time.Sleep(3 * time.Millisecond) // distinct update times: ties order by id
		}
		createQuote(t, h, h.bearer("other", "quotes:write")) // another tenant's
		wantStatus(t, h.do("POST", "/v1/quotes/"+ids[1]+"/submit", nil, "Authorization", auth, "If-Match", "*"), 200)
		wantStatus(t, h.do("DELETE", "/v1/quotes/"+ids[3], nil, "Authorization", auth), 204)

		// cust-a: ids[1] (submitted last, so newest), ids[0]; ids[3] deleted.
		p, link := listQuotes(t, h, auth, "/v1/quotes?customerId=cust-a&limit=1")
		if len(p.Items) != 1 || p.Items[0].QuoteId != ids[1] || p.Items[0].Status != "SUBMITTED" {
			t.Fatalf("first page %+v", p)
		}
		want := `</v1/quotes?customerId=cust-a&limit=1&cursor=` + url.QueryEscape(p.NextCursor) + `>; rel="next"`
		if link != want {
			t.Fatalf("Link = %q, want %q", link, want)
		}
		next := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		p, link = listQuotes(t, h, auth, next)
		if len(p.Items) != 1 || p.Items[0].QuoteId != ids[0] || link != "" {
			t.Fatalf("second page %+v, Link %q", p, link)
		}
		for path, want := range map[string][]string{
			"/v1/quotes":                                       {ids[1], ids[4], ids[2], ids[0]},
			"/v1/quotes?status=DRAFT":                          {ids[4], ids[2], ids[0]},
			"/v1/quotes?status=SUBMITTED&status=DRAFT":         {ids[1], ids[4], ids[2], ids[0]},
			"/v1/quotes?status=SUBMITTED":                      {ids[1]},
			"/v1/quotes?salesChannel=web":                      {ids[4], ids[2], ids[0]},
			"/v1/quotes?salesChannel=partner&status=DRAFT":     nil,
			"/v1/quotes?customerId=cust-b&salesChannel=web":    {ids[2]},
			"/v1/quotes?updatedSince=2099-01-01T00:00:00Z":     nil,
			"/v1/quotes?updatedSince=2000-01-01T00:00:00.000Z": {ids[1], ids[4], ids[2], ids[0]},
		} {
			p, _ := listQuotes(t, h, auth, path)
			var got []string
			for _, q := range p.Items {
				got = append(got, q.QuoteId)
				wantStatus(t, h.do("GET", "/v1/quotes/"+q.QuoteId, nil, "Authorization", auth), 200)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s = %v, want %v", path, got, want)
			}
		}

		for path, param := range map[string]string{
			"/v1/quotes?customer=cust-a":                          "query:customer",
			"/v1/quotes?status=OPEN":                              "status",
			"/v1/quotes?limit=101":                                "limit",
			"/v1/quotes?customerId=cust-b&cursor=" + p.NextCursor: "",
		} {
			pr := wantProblem(t, h.do("GET", path, nil, "Authorization", auth), 400, "validation")
			if param == "" {
				continue
			}
			named := false
			for _, e := range pr.Errors {
				named = named || strings.Contains(e.Parameter, param)
			}
			if !named {
				t.Errorf("%s: problem %+v does not name %s", path, pr, param)
			}
		}
		first, _ := listQuotes(t, h, auth, "/v1/quotes?customerId=cust-a&limit=1")
		pr := wantProblem(t, h.do("GET", "/v1/quotes?customerId=cust-b&limit=1&cursor="+first.NextCursor, nil, "Authorization", auth), 400, "validation")
		if len(pr.Errors) != 1 || pr.Errors[0].Parameter != "query:cursor" {
			t.Errorf("foreign cursor: %+v", pr)
		}
		wantProblem(t, h.do("GET", "/v1/quotes", nil, "Authorization", h.bearer("acme", "quotes:write")), 403, "insufficient-scope")
	})
}

// A page of 100 drafts with the longest customer id and channel the contract allows stays
// under 64 KiB.
func TestQuoteListPageOf100Size(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	auth := h.bearer("acme", "quotes:read", "quotes:write")
	body := map[string]any{"customerId": strings.Repeat("c", 64), "salesChannel": strings.Repeat("s", 32), "currency": "EUR"}
	for range 101 {
		wantStatus(t, h.do("POST", "/v1/quotes", body, "Authorization", auth), 201)
	}
	start := time.Now()
	rec := h.do("GET", "/v1/quotes?limit=100&customerId="+strings.Repeat("c", 64), nil, "Authorization", auth)
	wantStatus(t, rec, 200)
	var p quotePageJSON
	decode(t, rec, &p)
	if len(p.Items) != 100 || p.NextCursor == "" {
		t.Fatalf("page of %d, next %q", len(p.Items), p.NextCursor)
	}
	if n := rec.Body.Len(); n >= 64<<10 {
		t.Fatalf("a page of 100 is %d bytes", n)
	}
	t.Logf("a page of 100 drafts: %d bytes (%s)", rec.Body.Len(), time.Since(start))
}
