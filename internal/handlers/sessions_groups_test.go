package handlers

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/testredis"
)

// assertionGroups is the groups claim of the X-Auth-Assertion in rec (the signature is the
// auth package's tests' concern).
func assertionGroups(t *testing.T, rec interface{ Header() http.Header }) []string {
	t.Helper()
	parts := strings.Split(rec.Header().Get("X-Auth-Assertion"), ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q", rec.Header().Get("X-Auth-Assertion"))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Groups []string `json:"groups"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Groups
}

// TestSessionGroupsHTTP: groups named at create are answered by the create, the session view,
// whoami and forward auth (X-Auth-Groups, the body, the assertion); a session without groups
// answers none (no header, no member, no claim); PUT .../groups replaces them (200, the view)
// for the caller's tenant only; over the bounds is a 400 naming the bound.
func TestSessionGroupsHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	created := h.createSession("acme", "alice", map[string]any{"groups": []string{"staff", "admins"}})
	want := []string{"staff", "admins"}
	if created.Groups == nil || !slices.Equal(*created.Groups, want) {
		t.Fatalf("create answered groups %v", created.Groups)
	}
	writer, reader := h.bearer("acme", "sessions:write", "sessions:read"), h.bearer("acme", "sessions:read")
	view := func(who string) []string {
		t.Helper()
		rec := h.do("GET", "/v1/sessions/"+created.SessionId, nil, "Authorization", who)
		if rec.Code != 200 {
			t.Fatalf("get: %d %s", rec.Code, rec.Body)
		}
		var v Session
		decode(t, rec, &v)
		return deref(v.Groups)
	}
	if g := view(reader); !slices.Equal(g, want) {
		t.Fatalf("view groups %v", g)
	}
	rec := h.do("GET", "/v1/session", nil, SessionHeaderName, created.Token)
	var me Session
	decode(t, rec, &me)
	if rec.Code != 200 || !slices.Equal(deref(me.Groups), want) {
		t.Fatalf("whoami: %d %s", rec.Code, rec.Body)
	}
	authorize := func(token string) (*AuthorizeResult, http.Header, []string) {
		t.Helper()
		rec := h.do("GET", "/v1/authorize", nil, SessionHeaderName, token)
		if rec.Code != 200 {
			t.Fatalf("authorize: %d %s", rec.Code, rec.Body)
		}
		var r AuthorizeResult
		decode(t, rec, &r)
		return &r, rec.Header(), assertionGroups(t, rec)
	}
	r, hdr, claim := authorize(created.Token)
	if hdr.Get("X-Auth-Groups") != "staff,admins" || r.Groups == nil || !slices.Equal(*r.Groups, want) || !slices.Equal(claim, want) {
		t.Fatalf("authorize: header %q, body %v, claim %v", hdr.Get("X-Auth-Groups"), r.Groups, claim)
	}

	plain := h.createSession("acme", "bob", nil)
	if plain.Groups != nil {
		t.Fatalf("a session without groups answered %v", *plain.Groups)
	}
	r, hdr, claim = authorize(plain.Token)
	if _, ok := hdr["X-Auth-Groups"]; ok || r.Groups != nil || claim != nil {
		t.Fatalf("no groups: header %v, body %v, claim %v", hdr["X-Auth-Groups"], r.Groups, claim)
	}

	// Replace.
	rec = h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", map[string]any{"groups": []string{"ops"}}, "Authorization", writer)
	var replaced Session
	decode(t, rec, &replaced)
	if rec.Code != 200 || replaced.SessionId != created.SessionId || !slices.Equal(deref(replaced.Groups), []string{"ops"}) {
		t.Fatalf("put groups: %d %s", rec.Code, rec.Body)
	}
	if _, hdr, claim = authorize(created.Token); hdr.Get("X-Auth-Groups") != "ops" || !slices.Equal(claim, []string{"ops"}) {
		t.Fatalf("after the put: header %q, claim %v", hdr.Get("X-Auth-Groups"), claim)
	}
	rec = h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", map[string]any{"groups": []string{}}, "Authorization", writer)
	if rec.Code != 200 || view(reader) != nil {
		t.Fatalf("put no groups: %d %s", rec.Code, rec.Body)
	}
	if _, hdr, _ = authorize(created.Token); hdr.Get("X-Auth-Groups") != "" {
		t.Fatalf("cleared groups still sent: %q", hdr.Get("X-Auth-Groups"))
	}

	// Refusals.
	body := map[string]any{"groups": []string{"x"}}
	wantProblem(t, h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", body, "Authorization", reader), 403, "insufficient-scope")
	wantProblem(t, h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", body, "Authorization", h.bearer("globex", "sessions:write")), 404, "not-found")
	wantProblem(t, h.do("PUT", "/v1/sessions/s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB/groups", body, "Authorization", writer), 404, "not-found")
	wantProblem(t, h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", map[string]any{}, "Authorization", writer), 400, "")
	if g := view(reader); g != nil {
		t.Fatalf("refused puts changed the groups: %v", g)
	}
	many := make([]string, 33)
	for i := range many {
		many[i] = fmt.Sprintf("g%d", i)
	}
	for _, c := range []struct {
		groups []string
		hint   string
	}{
		{many, "32"},
		{[]string{strings.Repeat("g", 65)}, "64"},
		{[]string{"a,b"}, "/groups/0"},
		{[]string{"staff", "staff"}, "/groups"},
	} {
		p := wantProblem(t, h.do("POST", "/v1/sessions", map[string]any{"userId": "carol", "authLevel": "BASIC", "groups": c.groups},
			"Authorization", writer), 400, "")
		if all, _ := json.Marshal(p); !strings.Contains(string(all), c.hint) {
			t.Errorf("create with %d groups (%.20q...): %s does not name %q", len(c.groups), c.groups[0], all, c.hint)
		}
		p = wantProblem(t, h.do("PUT", "/v1/sessions/"+created.SessionId+"/groups", map[string]any{"groups": c.groups}, "Authorization", writer), 400, "")
		if all, _ := json.Marshal(p); !strings.Contains(string(all), c.hint) {
			t.Errorf("put of %d groups: %s does not name %q", len(c.groups), all, c.hint)
		}
	}
}

// TestAuthorizeRulesGroups: `require: {groups: [admins]}` passes a session holding admins and
// refuses one without it with 403 naming the group; replacing the groups decides the next
// request.
func TestAuthorizeRulesGroups(t *testing.T) {
	t.Parallel()
	h := rulesHarness(t, `default: deny
rules:
  - name: admin
    paths: ["/admin/**"]
    require: {groups: [admins]}
`)
	admin := h.createSession("acme", "alice", map[string]any{"groups": []string{"staff", "admins"}})
	staff := h.createSession("acme", "bob", map[string]any{"groups": []string{"staff"}})
	check := func(token string) *http.Response {
		t.Helper()
		return h.do("GET", "/v1/authorize", nil, "X-Forwarded-Uri", "/admin/users", "X-Forwarded-Method", "GET", SessionHeaderName, token).Result()
	}
	if res := check(admin.Token); res.StatusCode != 200 || res.Header.Get("X-Auth-Groups") != "staff,admins" {
		t.Fatalf("a session in admins: %d %v", res.StatusCode, res.Header)
	}
	rec := h.do("GET", "/v1/authorize", nil, "X-Forwarded-Uri", "/admin/users", SessionHeaderName, staff.Token)
	p := wantProblem(t, rec, 403, "access-denied")
	if !strings.Contains(p.Detail, "rule 0 (admin) requires membership of one of the groups admins") {
		t.Fatalf("detail %q", p.Detail)
	}
	if rec := h.do("PUT", "/v1/sessions/"+staff.SessionId+"/groups", map[string]any{"groups": []string{"admins"}},
		"Authorization", h.bearer("acme", "sessions:write")); rec.Code != 200 {
		t.Fatalf("put: %d %s", rec.Code, rec.Body)
	}
	if res := check(staff.Token); res.StatusCode != 200 {
		t.Fatalf("after joining admins: %d", res.StatusCode)
	}
}

// TestRotateAndVerifyAnswerGroups: the answers of POST .../rotate and .../mfa/verify carry the
// session's groups, as every other session view does; a session without groups answers none.
func TestRotateAndVerifyAnswerGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	writer := h.bearer("acme", "sessions:write")
	answered := func(what string, rec interface{ Result() *http.Response }, body []byte) any {
		t.Helper()
		if code := rec.Result().StatusCode; code != 200 {
			t.Fatalf("%s: %d %s", what, code, body)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		return m["groups"]
	}
	for _, groups := range [][]string{{"staff", "admins"}, nil} {
		extra := map[string]any{}
		if groups != nil {
			extra["groups"] = groups
		}
		s := h.createSession("acme", "alice", extra)
		want := any(nil)
		if groups != nil {
			want = []any{"staff", "admins"}
		}
		rec := h.do("POST", "/v1/sessions/"+s.SessionId+"/rotate", nil, "Authorization", writer)
		if g := answered("rotate", rec, rec.Body.Bytes()); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("rotate answered groups %v, want %v", g, want)
		}
		var rotated SessionToken
		decode(t, rec, &rotated)
		c := h.challenge("acme", rotated.SessionId)
		rec = h.verify("acme", rotated.SessionId, c.ChallengeId, c.Code)
		if g := answered("verify", rec, rec.Body.Bytes()); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("mfa verify answered groups %v, want %v", g, want)
		}
	}
}
