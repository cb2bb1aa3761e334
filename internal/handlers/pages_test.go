package handlers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A list answers a query parameter it does not define with a 400 naming it (a mistyped
// filter listed everything), after authentication and whatever else is wrong.
func TestListRefusesUnknownQueryParameter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	admin := h.bearer("acme", auth.ScopeTokensRead)
	for _, tc := range []struct{ query, want string }{
		{"bogus=1", "query:bogus"},
		{"limit=2&Limit=3", "query:Limit"},
		{"cursor=x&status=OPEN", "query:status"},
	} {
		p := wantProblem(t, h.do("GET", "/v1/tokens?"+tc.query, nil, "Authorization", admin), 400, "validation")
		if len(p.Errors) != 1 || p.Errors[0].Parameter != tc.want || !strings.Contains(p.Detail, strings.TrimPrefix(tc.want, "query:")) ||
			!strings.Contains(p.Detail, "cursor, limit") {
			t.Fatalf("%s: problem = %+v", tc.query, p)
		}
	}
	p := wantProblem(t, h.do("GET", "/v1/tokens?a=1&b=2", nil, "Authorization", admin), 400, "validation")
	if len(p.Errors) != 2 || p.Errors[0].Parameter != "query:a" || p.Errors[1].Parameter != "query:b" {
		t.Fatalf("two unknown: %+v", p)
	}
	wantProblem(t, h.do("GET", "/v1/tokens?limit=2;cursor=x", nil, "Authorization", admin), 400, "validation")
	// Every list, whatever its path parameters hold (the refusal comes before they are checked).
	every := h.bearer("acme", "sessions:read", "quotes:read", "cases:read", "webhooks:read", "events:read")
	for _, list := range []string{"/v1/users/u1/sessions", "/v1/quotes/q_x/items", "/v1/cases/c_x/history",
		"/v1/webhooks", "/v1/webhooks/wh_x/deliveries", "/v1/events"} {
		p := wantProblem(t, h.do("GET", list+"?limit=1&statsu=OPEN", nil, "Authorization", every), 400, "validation")
		if len(p.Errors) != 1 || p.Errors[0].Parameter != "query:statsu" {
			t.Fatalf("%s: %+v", list, p)
		}
	}
	p = wantProblem(t, h.do("GET", "/v1/session/devices?order=asc", nil, "X-Session-Token", h.createSession("acme", "ann", nil).Token), 400, "validation")
	if len(p.Errors) != 1 || p.Errors[0].Parameter != "query:order" {
		t.Fatalf("devices: %+v", p)
	}
	wantProblem(t, h.do("GET", "/v1/tokens?bogus=1", nil), 401, "")
	if rec := h.do("GET", "/v1/tokens?limit=1", nil, "Authorization", admin); rec.Code != 200 {
		t.Fatalf("known parameters: %d %s", rec.Code, rec.Body)
	}
}

// Each page but the last names the next in an RFC 8288 Link header: the request's own path
// and query with the cursor replaced; following the links walks the whole list.
func TestListLinkNamesTheNextPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	admin := h.bearer("acme", auth.ScopeTokensRead, auth.ScopeTokensWrite)
	for range 4 {
		mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read"))
		time.Sleep(2 * time.Millisecond)
	}
	seen := map[string]bool{}
	target := "/v1/tokens?limit=2"
	for page := 0; target != ""; page++ {
		rec := h.do("GET", target, nil, "Authorization", admin)
		var p TokenPage
		decode(t, rec, &p)
		if rec.Code != 200 || page > 5 {
			t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
		for _, it := range p.Items {
			if seen[it.TokenId] {
				t.Fatalf("%s listed twice", it.TokenId)
			}
			seen[it.TokenId] = true
		}
		link := rec.Header().Get("Link")
		if p.NextCursor == nil {
			if link != "" {
				t.Fatalf("last page has Link %q", link)
			}
			break
		}
		want := `</v1/tokens?limit=2&cursor=` + *p.NextCursor + `>; rel="next"`
		if link != want {
			t.Fatalf("Link = %q, want %q", link, want)
		}
		target = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	}
	if len(seen) != 5 { // four issued and the caller's own
		t.Fatalf("walked %d tokens", len(seen))
	}
}

// The Link target keeps every other parameter where it was and escapes what it carries, so
// the header stays one URI reference whatever the caller sent.
func TestNextLinkReplacesOnlyTheCursor(t *testing.T) {
	t.Parallel()
	at := func(path, query string) context.Context {
		return context.WithValue(context.Background(), pageURLKey{}, pageURL{path: path, query: query})
	}
	for _, tc := range []struct{ path, query, next, want string }{
		{"/v1/tokens", "", "abc", `</v1/tokens?cursor=abc>; rel="next"`},
		{"/v1/tokens", "limit=2", "abc", `</v1/tokens?limit=2&cursor=abc>; rel="next"`},
		{"/v1/tokens", "cursor=old&limit=2", "abc", `</v1/tokens?cursor=abc&limit=2>; rel="next"`},
		{"/v1/quotes", "status=DRAFT&cursor=old&status=SUBMITTED&limit=2&cursor=older", "n_-1",
			`</v1/quotes?status=DRAFT&cursor=n_-1&status=SUBMITTED&limit=2>; rel="next"`},
		{"/v1/quotes", "customerId=a%3Eb%20c&&x", "n", `</v1/quotes?customerId=a%3Eb+c&x=&cursor=n>; rel="next"`},
		{"/v1/users/a%2Fb%20c/sessions", "limit=1", "n", `</v1/users/a%2Fb%20c/sessions?limit=1&cursor=n>; rel="next"`},
	} {
		got := nextLink(at(tc.path, tc.query), tc.next)
		if got == nil || *got != tc.want {
			t.Errorf("%s?%s: Link = %v, want %s", tc.path, tc.query, deref(got), tc.want)
		}
	}
	if got := nextLink(at("/v1/tokens", "limit=2"), ""); got != nil {
		t.Errorf("last page: Link = %q", *got)
	}
	if got := nextLink(context.Background(), "abc"); got != nil {
		t.Errorf("not a list: Link = %q", *got)
	}
}

// A cursor is its list's: another draft's, another user's or another case's cursor, and one
// this gateway never made, are a 400 naming `cursor`, before anything is read.
func TestListCursorOfAnotherListRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	auth := h.bearer("acme", "quotes:read", "quotes:write", "sessions:read", "sessions:write", "cases:read", "cases:write")
	quote := func() string {
		rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth)
		wantStatus(t, rec, 201)
		var q quoteJSON
		decode(t, rec, &q)
		for _, id := range []string{"a", "b"} {
			wantStatus(t, h.do("PUT", "/v1/quotes/"+q.QuoteId+"/items/"+id, map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": 1},
				"Authorization", auth, "If-Match", "*"), 200)
		}
		return "/v1/quotes/" + q.QuoteId + "/items"
	}
	kase := func() string {
		rec := h.do("POST", "/v1/cases", caseBody(time.Now().Add(time.Hour)), "Authorization", auth)
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		wantStatus(t, h.do("POST", "/v1/cases/"+c.CaseId+"/assign", map[string]any{"assignedTeam": "t2"}, "Authorization", auth), 200)
		return "/v1/cases/" + c.CaseId + "/history"
	}
	users := func(user string) func() string {
		return func() string {
			h.createSession("acme", user, nil)
			h.createSession("acme", user, nil)
			return "/v1/users/" + user + "/sessions"
		}
	}
	for _, tc := range []struct {
		name      string
		one, more func() string
	}{{"quote items", quote, quote}, {"case history", kase, kase}, {"user sessions", users("ann"), users("bob")}} {
		a, b := tc.one(), tc.more()
		rec := h.do("GET", a+"?limit=1", nil, "Authorization", auth)
		var p listPage
		decode(t, rec, &p)
		if rec.Code != 200 || p.NextCursor == nil {
			t.Fatalf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
		for _, bad := range []string{*p.NextCursor, "AAAAAAAAAAAA", "x"} {
			pr := wantProblem(t, h.do("GET", b+"?limit=1&cursor="+bad, nil, "Authorization", auth), 400, "validation")
			if len(pr.Errors) != 1 || pr.Errors[0].Parameter != "query:cursor" {
				t.Fatalf("%s, cursor %s: %+v", tc.name, bad, pr)
			}
		}
		if rec := h.do("GET", a+"?limit=1&cursor="+*p.NextCursor, nil, "Authorization", auth); rec.Code != 200 {
			t.Fatalf("%s: own cursor: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
}
