package handlers

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestProblemTypesResolve: the type of a problem the gateway answers is a URI that the same
// gateway serves, a page naming the problem's title and status, what it means and what to do;
// with GATEWAY_PUBLIC_URL set, the type is under that URL.
func TestProblemTypesResolve(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"", "https://api.example.com/hashgate"} {
		t.Run("base="+base, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, testredis.Backends()[0])
			h := newHarnessWith(t, s, TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) { c.PublicURL = base }}, nil)
			rec := h.do("GET", "/v1/quotes/q_01hzzzzzzzzzzzzzzzzzzzzzzz", nil, "Authorization", h.bearer("acme", allScopes...))
			p := wantProblem(t, rec, 404, "not-found")
			if !strings.HasPrefix(p.Type, base+"/problems/") {
				t.Fatalf("type %q is not under %q", p.Type, base)
			}
			// Resolve the type against the request's URL, as a client does, and fetch it from the
			// gateway (a proxy in front maps the public URL's path prefix to the gateway's root).
			ref, err := url.Parse(p.Type)
			if err != nil {
				t.Fatal(err)
			}
			path := strings.TrimPrefix(ref.Path, "/hashgate")
			page := h.do("GET", path, nil, "Accept", "application/json")
			if page.Code != 200 || page.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("GET %s: %d %q %s", path, page.Code, page.Header().Get("Content-Type"), page.Body)
			}
			var got problemPage
			decode(t, page, &got)
			if got.Type != p.Type || got.Title != p.Title || got.Status != 404 || got.When == "" || got.Do == "" {
				t.Fatalf("page of %s: %+v", p.Type, got)
			}
		})
	}
}

// TestEveryProblemTypeHasItsPage: GET /problems/{slug} answers every kind of apperr's table, as
// HTML to a browser, JSON to Accept: application/json and text to curl; an unknown slug is a
// 404 problem.
func TestEveryProblemTypeHasItsPage(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
	for _, k := range apperr.Kinds() {
		path := "/problems/" + k.Slug
		rec := h.do("GET", path, nil, "Accept", browser)
		body := rec.Body.String()
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "<h1>"+strings.ReplaceAll(k.Title, "'", "&#39;")+"</h1>") || !strings.Contains(body, "When it happens") ||
			!strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s as a browser: %d %q %v\n%s", path, rec.Code, rec.Header().Get("Content-Type"), rec.Header(), body)
			continue
		}
		rec = h.do("GET", path, nil, "Accept", "*/*")
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") || !strings.Contains(rec.Body.String(), "What to do: ") {
			t.Errorf("GET %s as curl: %d %q %s", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		rec = h.do("GET", path, nil, "Accept", "application/json")
		var p problemPage
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Slug != k.Slug || p.Status != k.Status || p.Type != "/problems/"+k.Slug {
			t.Errorf("GET %s as JSON: %d %s", path, rec.Code, rec.Body)
		}
		if v := rec.Header().Get("Vary"); v != "Accept" {
			t.Errorf("GET %s: Vary %q", path, v)
		}
	}
	wantProblem(t, h.do("GET", "/problems/no-such-problem", nil), 404, "not-found")
}

func TestNegotiate(t *testing.T) {
	t.Parallel()
	offers := []string{"text/html", "application/json", "text/plain"}
	for accept, want := range map[string]string{
		"": "text/plain", "*/*": "text/plain", "text/html": "text/html", "application/json": "application/json",
		"application/json;q=0.5, text/html;q=0.4": "application/json", "text/*": "text/html", "text/plain, */*;q=0.1": "text/plain",
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": "text/html", "image/png": "text/html",
		"application/json;q=0": "text/html",
	} {
		if got := negotiate(accept, offers...); got != want {
			t.Errorf("negotiate(%q) = %q, want %q", accept, got, want)
		}
	}
}

// TestSpecListsEveryProblemType: the contract's overview (info.description, the top of /docs)
// links every problem type of apperr's table to its page, and no other.
func TestSpecListsEveryProblemType(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(problems/([a-z0-9-]+)\)`).FindAllStringSubmatch(spec.Info.Description, -1) {
		listed[m[1]] = true
	}
	for _, k := range apperr.Kinds() {
		if !listed[k.Slug] {
			t.Errorf("info.description does not link the problem type %q", k.Slug)
		}
		delete(listed, k.Slug)
	}
	for slug := range listed {
		t.Errorf("info.description links %q, which apperr's table does not have", slug)
	}
}
