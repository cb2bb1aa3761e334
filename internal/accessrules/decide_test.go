package accessrules

import (
	"strings"
	"testing"
)

func exampleSet(t testing.TB) *Set {
	t.Helper()
	s, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecideNormalizedSpellings: every spelling an upstream may read as a protected path is
// decided by that path's rule.
func TestDecideNormalizedSpellings(t *testing.T) {
	s := exampleSet(t)
	for _, c := range []struct {
		method, host, uri, want string
	}{
		{"GET", "app.example.com", "/public/app.js", "rule 0 (public)"},
		{"GET", "app.example.com", "/public", "rule 0 (public)"},
		{"GET", "app.example.com", "/admin", "rule 1 (admin)"},
		{"GET", "app.example.com", "/Admin/", "rule 1 (admin)"},
		{"GET", "app.example.com", "/ADMIN/x", "rule 1 (admin)"},
		{"GET", "app.example.com", "/admin;/", "rule 1 (admin)"},
		{"GET", "app.example.com", "/admin./", "rule 1 (admin)"},
		{"GET", "app.example.com", "/admin.", "rule 1 (admin)"},
		{"GET", "app.example.com", "/admin%2e/", "rule 1 (admin)"},
		{"GET", "app.example.com", "/public%2F..%2Fadmin/users", "rule 1 (admin)"},
		{"GET", "app.example.com", "/public/../admin", "rule 1 (admin)"},
		{"GET", "app.example.com", "/public/..;/admin", "rule 1 (admin)"},
		{"GET", "app.example.com", "//admin//users", "rule 1 (admin)"},
		{"GET", "app.example.com", "/aDmIn/UsErS?x=1", "rule 1 (admin)"},
		{"GET", "app.example.com", "/public/%2e%2e/admin", "rule 1 (admin)"},
		// Its own path: "admin " is not admin, so the catch-all decides.
		{"GET", "app.example.com", "/admin%20/", "rule 5"},
		{"GET", "app.example.com", "/administrator", "rule 5"},
		{"POST", "API.Example.com:443", "/orders", "rule 2 (orders-write)"},
		{"post", "api.example.com.", "/orders", "rule 2 (orders-write)"},
		{"GET", "api.example.com", "/orders", "rule 5"},
		{"HEAD", "api.example.com", "/orders", "rule 5"},
		{"POST", "app.example.com", "/orders", "default"},
		{"GET", "x", "/reports/q1/pdf", "rule 3 (reports)"},
		{"GET", "x", "/reports/q1/x/pdf", "rule 5"},
		{"GET", "x", "/files/a.JSON", "rule 3 (reports)"},
		{"POST", "a.internal.example.com", "/", "rule 4 (blocked)"},
		{"POST", "internal.example.com", "/", "default"},
		{"GET", "x", "/admin%zz", "invalid path"},
		{"GET", "x", "/admin%00", "invalid path"},
	} {
		got := s.Decide(Request{Method: c.method, Host: c.host, URI: c.uri}).Label()
		if got != c.want {
			t.Errorf("%s %s %s: decided by %s, want %s", c.method, c.host, c.uri, got, c.want)
		}
	}
}

func TestRequirementMissing(t *testing.T) {
	s := exampleSet(t)
	admin, orders := s.Rules[1].Require, s.Rules[2].Require
	for _, c := range []struct {
		q    *Requirement
		subj Subject
		want string
	}{
		{admin, Subject{Kind: KindSession, Level: "MFA", Groups: []string{"admins"}}, ""},
		{admin, Subject{Kind: KindSession, Level: "BASIC", Groups: []string{"admins"}}, "level MFA"},
		{admin, Subject{Kind: KindSession, Level: "MFA"}, "membership of one of the groups admins"},
		{orders, Subject{Kind: KindToken, Level: "BASIC", Scopes: []string{"orders:write"}}, ""},
		{orders, Subject{Kind: KindToken, Level: "BASIC", Scopes: []string{"quotes:read"}}, "a token with the scopes orders:write"},
		{orders, Subject{Kind: KindSession, Level: "MFA"}, "a token with the scopes orders:write"},
	} {
		got := c.q.Missing(c.subj)
		if got != c.want || c.q.Met(c.subj) != (c.want == "") {
			t.Errorf("%+v: missing %q (met %v), want %q", c.subj, got, c.q.Met(c.subj), c.want)
		}
	}
}

func TestParseErrorsByLine(t *testing.T) {
	_, err := Parse([]byte(`default: maybe
rules:
  - paths: ["admin/**"]
    policy: allow
  - paths: ["/a/**/b/**/c/**"]
    require: {level: HIGH, kinds: [robot], colour: red}
  - methods: ["GE T"]
  - paths: ["/x"]
    policy: allow
    require: {level: MFA}
  - hosts: ["a.com:80"]
    policy: permit
`))
	if err == nil {
		t.Fatal("an invalid file parsed")
	}
	for _, want := range []string{
		`line 1: default: allow, deny`,
		`line 3: rules[0].paths: path "admin/**" must start with /`,
		`line 5: rules[1].paths: path "/a/**/b/**/c/**" has more than 2`,
		`line 6: rules[1].require.level: BASIC or MFA`,
		`line 6: rules[1].require.kinds: "robot": session or token`,
		`line 6: rules[1].require.colour: unknown key`,
		`line 7: rules[2].methods: "GE T" is not an HTTP method`,
		`line 7: rules[2]: say what the rule does`,
		`line 8: rules[3]: either policy or require, not both`,
		`line 11: rules[4].hosts: host "a.com:80"`,
		`line 12: rules[4].policy: allow or deny, not "permit"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestDecideAllocatesNothingOnNormalForms(t *testing.T) {
	s := exampleSet(t)
	r := Request{Method: "GET", Host: "app.example.com", URI: "/api/orders/42?page=2"}
	if n := testing.AllocsPerRun(100, func() { s.Decide(r) }); n != 0 {
		t.Errorf("Decide: %v allocations", n)
	}
}
