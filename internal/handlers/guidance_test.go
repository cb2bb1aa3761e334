package handlers

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestRefusalsNameWhatToSend sends, through the whole Echo stack, the mistakes a newcomer
// makes on the first day, and checks that each refusal says what to send instead: the
// credential and where it goes, the content type, the methods of the path, the body's
// members, the field at its JSON pointer, the format of a date-time.
func TestRefusalsNameWhatToSend(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	bearer := h.bearer("acme", allScopes...)
	rec := h.do("POST", "/v1/sessions", map[string]any{"userId": "alice", "authLevel": "BASIC"}, "Authorization", bearer)
	var s struct{ Token string }
	decode(t, rec, &s)
	if s.Token == "" {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
	const quote = "/v1/quotes/q_01hzzzzzzzzzzzzzzzzzzzzzzz"
	tests := []struct {
		name, method, path string
		body               any
		hdr                []string
		status             int
		slug               string
		detail             []string // each must appear in the problem's detail
		notDetail          []string // none may
		field              string   // a field error at this pointer or parameter
		fieldDetail        string   // ... whose detail contains this
		header             [2]string
	}{
		{name: "session token on a bearer-only operation", method: "GET", path: "/v1/tokens",
			hdr: []string{"X-Session-Token", s.Token}, status: 401, slug: "unauthenticated",
			detail: []string{"Authorization: Bearer", "session token is not accepted"}, notDetail: []string{"or a session token"}},
		{name: "session token in the cookie on a bearer-only operation", method: "GET", path: "/v1/tokens",
			hdr: []string{"Cookie", SessionCookieName + "=" + s.Token}, status: 401, slug: "unauthenticated",
			detail: []string{"Authorization: Bearer", "session token is not accepted"}},
		{name: "nothing on a bearer-only operation", method: "GET", path: "/v1/tokens",
			status: 401, slug: "unauthenticated", detail: []string{"Authorization: Bearer"}, notDetail: []string{"session"}},
		{name: "bearer token on a session-only operation", method: "GET", path: "/v1/session/devices",
			hdr: []string{"Authorization", bearer}, status: 401, slug: "unauthenticated",
			detail: []string{"X-Session-Token", SessionCookieName, "bearer token is not accepted"}},
		{name: "session token as a bearer token where sessions are accepted", method: "GET", path: "/v1/authorize",
			hdr: []string{"Authorization", "Bearer " + s.Token}, status: 401, slug: "invalid-credentials",
			detail: []string{"session token", "X-Session-Token", SessionCookieName}, notDetail: []string{"malformed"}},
		{name: "session token as a bearer token on a session-only operation", method: "GET", path: "/v1/session",
			hdr: []string{"Authorization", "Bearer " + s.Token}, status: 401, slug: "unauthenticated",
			detail: []string{"X-Session-Token", SessionCookieName}},
		{name: "session token as a bearer token on a bearer-only operation", method: "GET", path: "/v1/tokens",
			hdr: []string{"Authorization", "Bearer " + s.Token}, status: 401, slug: "invalid-credentials",
			detail: []string{"session token", "not accepted", "API token"}, notDetail: []string{"malformed"}},
		{name: "JSON on a merge-patch operation", method: "PATCH", path: quote, body: `{"discountMinor":1}`,
			hdr: []string{"Authorization", bearer, "If-Match", `"1"`}, status: 415, slug: "unsupported-media-type",
			detail: []string{"application/merge-patch+json"}},
		{name: "a method the path does not have", method: "PUT", path: "/v1/tokens",
			hdr: []string{"Authorization", bearer}, status: 405, slug: "method-not-allowed",
			detail: []string{"GET", "POST"}, header: [2]string{"Allow", "GET, POST"}},
		{name: "a method a path with a parameter does not have", method: "POST", path: quote,
			hdr: []string{"Authorization", bearer}, status: 405, slug: "method-not-allowed",
			header: [2]string{"Allow", "DELETE, GET, PATCH"}},
		{name: "a path that is not a route", method: "GET", path: "/v1/quote",
			hdr: []string{"Authorization", bearer}, status: 404, slug: "not-found", detail: []string{"/v1/quote", "/docs"}},
		{name: "no body", method: "POST", path: "/v1/quotes",
			hdr: []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"application/json", "customerId", "currency", "salesChannel"}, notDetail: []string{"Invalid: /."}},
		{name: "an empty JSON body", method: "POST", path: "/v1/quotes", body: " ",
			hdr: []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"application/json", "customerId"}},
		{name: "an unknown field", method: "POST", path: "/v1/quotes",
			body: `{"customerId":"c","currency":"EUR","salesChannel":"web","bogus":1}`,
			hdr:  []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"/bogus"}, field: "/bogus", fieldDetail: "customerId"},
		{name: "an unknown nested field", method: "POST", path: "/v1/sessions",
			body: `{"userId":"a","authLevel":"BASIC","device":{"label":"x","colour":1}}`,
			hdr:  []string{"Authorization", bearer}, status: 400, slug: "validation",
			field: "/device/colour", fieldDetail: "label"},
		{name: "a long unknown member name is echoed bounded", method: "POST", path: "/v1/quotes",
			body: `{"customerId":"c","currency":"EUR","salesChannel":"web","` + strings.Repeat("n", 5000) + `":1}`,
			hdr:  []string{"Authorization", bearer}, status: 400, slug: "validation", detail: []string{"/nnnn"}},
		{name: "a date-time that is not one", method: "POST", path: "/v1/cases",
			body: `{"subjectRef":"s","assignedTeam":"t","reason":"r","dueAt":"tomorrow"}`,
			hdr:  []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"/dueAt", "RFC 3339"}, field: "/dueAt", fieldDetail: "2026-01-31T17:00:00Z"},
		{name: "an id of the wrong shape", method: "GET", path: "/v1/tokens/nonexistent0000000000000000",
			hdr: []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"tokenId", "exactly 26 characters", "e.g. 01m8c8r4pprn61nsrhhsc0n5kn"}, notDetail: []string{"regular expression", "^["},
			field: "path:tokenId", fieldDetail: "exactly 26 characters"},
		{name: "a string with characters it may not hold", method: "POST", path: "/v1/quotes",
			body: `{"customerId":"c 1!","currency":"EUR","salesChannel":"web"}`,
			hdr:  []string{"Authorization", bearer}, status: 400, slug: "validation",
			detail: []string{"/customerId", "1 to 64 characters of A-Z a-z 0-9 . _ : -"}, notDetail: []string{"regular expression"},
			field: "/customerId", fieldDetail: "A-Z a-z 0-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := h.do(tt.method, tt.path, tt.body, tt.hdr...)
			p := wantProblem(t, rec, tt.status, tt.slug)
			t.Logf("%s", rec.Body)
			for _, want := range tt.detail {
				if !strings.Contains(p.Detail, want) {
					t.Errorf("detail %q does not name %q", p.Detail, want)
				}
			}
			for _, bad := range tt.notDetail {
				if strings.Contains(p.Detail, bad) {
					t.Errorf("detail %q says %q", p.Detail, bad)
				}
			}
			if len(p.Detail) > 300 {
				t.Errorf("detail of %d bytes: %q", len(p.Detail), p.Detail)
			}
			if tt.field != "" {
				found := false
				for _, f := range p.Errors {
					if f.Pointer == tt.field || f.Parameter == tt.field {
						found = true
						if !strings.Contains(f.Detail, tt.fieldDetail) {
							t.Errorf("field %s: detail %q does not name %q", tt.field, f.Detail, tt.fieldDetail)
						}
						if len(f.Detail) > 200 {
							t.Errorf("field %s: detail of %d bytes: %q", tt.field, len(f.Detail), f.Detail)
						}
					}
				}
				if !found {
					t.Errorf("no field error at %s: %s", tt.field, rec.Body)
				}
			}
			if tt.header[0] != "" {
				if got := rec.Header().Get(tt.header[0]); got != tt.header[1] {
					t.Errorf("%s = %q, want %q", tt.header[0], got, tt.header[1])
				}
			}
		})
	}
}

// TestEveryPatternHasWords: every string the contract restricts by a pattern is refused with
// words (its length, an example or the characters it may hold), never the regular expression:
// a pattern stringHint cannot spell needs an example in the spec.
func TestEveryPatternHasWords(t *testing.T) {
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, ref *openapi3.SchemaRef)
	walk = func(where string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Pattern != "" {
			if h := stringHint(s); h == "" || strings.Contains(h, "^") {
				t.Errorf("%s: pattern %q has no words (%q): give it an example", where, s.Pattern, h)
			}
		}
		for name, p := range s.Properties {
			walk(where+"/"+name, p)
		}
		walk(where+"/items", s.Items)
		for _, sub := range append(append(s.AllOf, s.OneOf...), s.AnyOf...) {
			walk(where, sub)
		}
	}
	for name, ref := range spec.Components.Schemas {
		walk("#/components/schemas/"+name, ref)
	}
	for name, p := range spec.Components.Parameters {
		walk("#/components/parameters/"+name, p.Value.Schema)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range append(item.Parameters, op.Parameters...) {
				walk(method+" "+path+" "+p.Value.Name, p.Value.Schema)
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("walked %d schemas: the walk is broken", len(seen))
	}
}
