package handlers

import (
	"encoding/json"
	"testing"
)

// The hand-written authorize body must be byte-identical to encoding/json's, or step aside.
func TestAppendAuthorizeJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	sid := "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB"
	issuer, quoted := "issuer-svc", `is"suer`
	cases := []AuthorizeResult{
		{AuthLevel: AuthLevelBASIC, Kind: AuthorizeResultKindToken, Actor: &issuer, Scopes: &[]string{"tokens:read"}, Subject: "alice", TenantId: "acme"},
		{AuthLevel: AuthLevelBASIC, Kind: AuthorizeResultKindToken, Actor: &quoted, Subject: "alice", TenantId: "acme"},
		{AuthLevel: AuthLevelBASIC, Kind: AuthorizeResultKindSession, SessionId: &sid, Subject: "user-1", TenantId: "acme"},
		{AuthLevel: AuthLevelBASIC, Kind: AuthorizeResultKindSession, Groups: &[]string{"admins", "staff"}, SessionId: &sid, Subject: "user-1", TenantId: "acme"},
		{AuthLevel: AuthLevelMFA, Kind: AuthorizeResultKindSession, Groups: &[]string{"a\"b"}, SessionId: &sid, Subject: "user-1", TenantId: "acme"},
		{AuthLevel: AuthLevelMFA, SessionId: &sid, Subject: "", TenantId: ""},
		{AuthLevel: AuthLevelBASIC, Scopes: &[]string{"tokens:read", "sessions:write"}, Subject: "svc", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Scopes: &[]string{}, Subject: "svc", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Scopes: &[]string{"a"}, SessionId: &sid, Subject: "svc", TenantId: "t"},
		// Strings that need escaping take the fallback.
		{AuthLevel: AuthLevelBASIC, Subject: `quo"te`, TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Subject: "back\\slash", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Subject: "<script>&", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Subject: "caf\u00e9", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Subject: "tab\there", TenantId: "t"},
		{AuthLevel: AuthLevelBASIC, Subject: "s", TenantId: "bad\xffutf8"},
		{AuthLevel: AuthLevelBASIC, Scopes: &[]string{"ok", "no\"pe"}, Subject: "s", TenantId: "t"},
	}
	for _, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendAuthorizeJSON(nil, &c)
		if !ok {
			// Only strings needing escapes may fall back.
			plain, _ := appendAuthorizeJSON(nil, &AuthorizeResult{AuthLevel: c.AuthLevel, Subject: "x", TenantId: "x"})
			if plain == nil {
				t.Fatalf("fell back for a plain body")
			}
			continue
		}
		if string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	for _, i := range []int{0, 2, 3} {
		if _, ok := appendAuthorizeJSON(nil, &cases[i]); !ok {
			t.Fatalf("a plain body took the fallback: %+v", cases[i])
		}
	}
	if _, ok := appendAuthorizeJSON(nil, &cases[1]); ok {
		t.Fatal("a quote in the actor did not take the fallback")
	}
	if _, ok := appendAuthorizeJSON(nil, &cases[4]); ok {
		t.Fatal("a quote in a group did not take the fallback")
	}
	if _, ok := appendAuthorizeJSON(nil, &cases[9]); ok {
		t.Fatal("a quote in a value did not take the fallback")
	}
}

func FuzzAppendAuthorizeJSON(f *testing.F) {
	f.Add("user-1", "acme", "tokens:read", true)
	f.Add("a\"b", "<t>", "x\\y", false)
	f.Fuzz(func(t *testing.T, subject, tenant, scope string, session bool) {
		r := AuthorizeResult{AuthLevel: AuthLevelBASIC, Kind: AuthorizeResultKindToken, Subject: subject, TenantId: tenant}
		if session {
			sid := subject + tenant
			r.Kind, r.SessionId = AuthorizeResultKindSession, &sid
		} else {
			r.Scopes, r.Actor = &[]string{scope, tenant}, &scope
		}
		got, ok := appendAuthorizeJSON(nil, &r)
		if !ok {
			return
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
