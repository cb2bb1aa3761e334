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
