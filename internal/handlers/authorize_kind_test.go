package handlers

import (
	"strings"
	"testing"
)

// TestAuthorizeSaysKindAndActor: a token minted through POST /v1/tokens may name any subject
// (here "alice", as alice's session does), so forward auth says which kind of credential
// passed (X-Auth-Kind) and who minted a token (X-Auth-Actor, the JWT's act claim), in the
// headers and in the body; introspection shows the act chain. A session and a root token carry
// no actor.
func TestAuthorizeSaysKindAndActor(t *testing.T) {
	t.Parallel()
	tr := newTokenTree(t)
	h := tr.h
	session := h.createSession("acme", "alice", nil)
	type want struct{ kind, actor, subject string }
	for name, c := range map[string]struct {
		hdr  []string
		want want
	}{
		"session":                {[]string{"X-Session-Token", session.Token}, want{"session", "", "alice"}},
		"token minted by issuer": {[]string{"Authorization", tr.alice}, want{"token", "issuer-svc", "alice"}},
		"token minted by alice":  {[]string{"Authorization", tr.kid}, want{"token", "alice", "alice-kid"}},
		"root token":             {[]string{"Authorization", tr.admin}, want{"token", "", "svc-test"}},
	} {
		rec := h.do("GET", "/v1/authorize", nil, c.hdr...)
		var body AuthorizeResult
		decode(t, rec, &body)
		_, hasActor := rec.Header()["X-Auth-Actor"]
		got := want{rec.Header().Get("X-Auth-Kind"), rec.Header().Get("X-Auth-Actor"), rec.Header().Get("X-Auth-Subject")}
		bodyActor := ""
		if body.Actor != nil {
			bodyActor = *body.Actor
		}
		if rec.Code != 200 || got != c.want || hasActor != (c.want.actor != "") || string(body.Kind) != c.want.kind || bodyActor != c.want.actor {
			t.Errorf("%s: %d headers %+v (X-Auth-Actor present %v), body %s; want %+v", name, rec.Code, got, hasActor, rec.Body, c.want)
		}
	}
	rec := h.do("POST", "/v1/tokens/introspect", map[string]string{"token": strings.TrimPrefix(tr.kid, "Bearer ")}, "Authorization", tr.admin)
	var in Introspection
	decode(t, rec, &in)
	if rec.Code != 200 || !in.Active || in.Act == nil || in.Act.Sub != "alice" || in.Act.Act == nil || in.Act.Act.Sub != "issuer-svc" ||
		in.Act.Act.Act == nil || in.Act.Act.Act.Sub != "svc-test" || in.Act.Act.Act.Act != nil {
		t.Fatalf("introspect kid: %d %s, want act alice <- issuer-svc <- svc-test", rec.Code, rec.Body)
	}
	rec = h.do("POST", "/v1/tokens/introspect", map[string]string{"token": strings.TrimPrefix(tr.admin, "Bearer ")}, "Authorization", tr.admin)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `"act"`) {
		t.Fatalf("introspect a root: %d %s, want no act", rec.Code, rec.Body)
	}
}
