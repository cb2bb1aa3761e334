package handlers

import (
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want error
	}{
		{`{"a":1,"b":{"a":2,"c":[1,{"a":3}]},"c":"x"}`, nil},
		{` [1, 2, "a"] `, nil},
		{`"x"`, nil},
		{`{"a":1}{"a":1}`, errTrailing},
		{`{"a":1} x`, errTrailing},
		{`{"a":1,"a":2}`, errDuplicate},
		{`{"a":{"b":1,"b":1}}`, errDuplicate},
		{`{"a":[{"k":1},{"k":2}]}`, nil},
		{`{"a":"b","b":"a"}`, nil},
		{"{\"a\":\"\xff\"}", errUTF8},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), errDepth},
		{``, errEmpty},
		{`{"a":"x\u0000y"}`, errControl},
		{`{"a\u001b":1}`, errControl},
		{`{"a":"tab\tand\nnewline"}`, nil},
		{"[" + strings.Repeat("1,", 1000) + "1]", errArray},
		{"[" + strings.Repeat("[],", 999) + "[]]", nil},
	}
	for _, tt := range tests {
		if got := checkJSON([]byte(tt.in)); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.in, got, tt.want)
		}
	}
	if checkJSON([]byte(`{"a":`)) == nil || checkJSON([]byte(`{"a" 1}`)) == nil {
		t.Error("malformed JSON accepted")
	}
}

func TestCheckForm(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"token": true, "token_type_hint": true}
	tests := []struct {
		in   string
		want error
	}{
		{"token=abc&token_type_hint=access_token", nil},
		{"token=a&token=b", errDuplicate},
		{"token=a&zz=1", errUnknown},
		{"token=%FF%FE", errUTF8},
		{"token=a%00b", errControl},
	}
	for _, tt := range tests {
		if got := checkForm([]byte(tt.in), allowed); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The hot routes bypass the generic validator (their parameter is still checked), every other
// operation goes through it.
func TestHotRoutesSkipTheValidator(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	ix := newSpecIndex(spec)
	for path, want := range map[string]bool{"/v1/authorize": true, "/v1/session": true, "/v1/tokens": false} {
		if got := ix["GET "+path].hot; got != want {
			t.Errorf("hot(GET %s) = %v, want %v", path, got, want)
		}
	}
	p := wantProblem(t, h.do("GET", "/v1/authorize?level=ROOT", nil, "Authorization", h.bearer("acme", allScopes...)), 400, "validation")
	if len(p.Errors) != 1 || p.Errors[0].Parameter != "query:level" {
		t.Fatalf("errors = %+v", p.Errors)
	}
}
