package handlers

import (
	"maps"
	"slices"
	"testing"
)

// The one index of the spec gives each middleware what it read from its own walk before:
// security (the operation's, else the document's), hot routes with their query enums, which
// operations take a body, and the form fields of form bodies.
func TestSpecIndex(t *testing.T) {
	t.Parallel()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	ix := newSpecIndex(spec)
	for _, tc := range []struct {
		key                    string
		schemes                []string // security alternatives, one scheme each, in spec order
		hot, takesBody, isForm bool
		enums, form            []string
	}{
		{key: "GET /healthz"},
		{key: "GET /v1/authorize", schemes: []string{"sessionCookie", "sessionHeader", "bearerAuth"}, hot: true, enums: []string{"level"}},
		{key: "GET /v1/session", schemes: []string{"sessionCookie", "sessionHeader"}, hot: true},
		{key: "GET /v1/tokens", schemes: []string{"bearerAuth"}},
		{key: "POST /v1/tokens/introspect", schemes: []string{"bearerAuth"}, takesBody: true, isForm: true, form: []string{"token", "token_type_hint"}},
		{key: "PATCH /v1/quotes/:quoteId", schemes: []string{"bearerAuth"}, takesBody: true},
		{key: "DELETE /v1/session/devices/:sessionId", schemes: []string{"sessionCookie", "sessionHeader"}},
	} {
		o, ok := ix[tc.key]
		if !ok {
			t.Errorf("%s: not in the index", tc.key)
			continue
		}
		var schemes []string
		for _, req := range o.security {
			schemes = append(schemes, slices.Sorted(maps.Keys(req))...)
		}
		if !slices.Equal(schemes, tc.schemes) {
			t.Errorf("%s: security %v, want %v", tc.key, schemes, tc.schemes)
		}
		if o.hot != tc.hot || o.takesBody != tc.takesBody || (o.form != nil) != tc.isForm {
			t.Errorf("%s: hot %v takesBody %v form %v, want %v %v %v", tc.key, o.hot, o.takesBody, o.form != nil, tc.hot, tc.takesBody, tc.isForm)
		}
		if got := slices.Sorted(maps.Keys(o.enums)); !slices.Equal(got, tc.enums) {
			t.Errorf("%s: enums %v, want %v", tc.key, got, tc.enums)
		}
		if got := slices.Sorted(maps.Keys(o.form)); !slices.Equal(got, tc.form) {
			t.Errorf("%s: form fields %v, want %v", tc.key, got, tc.form)
		}
	}
}
