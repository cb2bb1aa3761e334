package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// auditLine is one "audit" line of the log.
type auditLine struct {
	Msg, Event, Tenant, Actor, Subject, Outcome string
	Count                                       int
}

// TestSessionAudit: each session change a caller makes over HTTP — login, MFA challenge,
// verify, wrong codes and the lock, rotation, logout, eviction at the cap, revoke and
// revoke-all — is one audit log line (OWASP ASVS V7) with the caller as actor, in the same
// words whoever writes it: the relay for a change whose event is written (all of them with
// GATEWAY_SESSION_EVENTS=all, the ends of sessions by default), the gateway that made it for
// the others (all of them with session events off or every event off).
func TestSessionAudit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		events        bool
		sessionEvents string
	}{{true, "ends"}, {true, "off"}, {false, "ends"}, {true, "all"}} {
		t.Run(fmt.Sprintf("events=%v,session-events=%v", c.events, c.sessionEvents), func(t *testing.T) {
			t.Parallel()
			testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
				cfg := defaults(t)
				cfg.KeyPrefix = prefix
				cfg.Events, cfg.SessionEvents = c.events, c.sessionEvents
				cfg.SessionMaxPerUser = 2
				g, logs := startLogged(t, cfg, s)
				written := events.SessionEvents(c.sessionEvents)
				if !c.events {
					written = events.SessionEventsOff
				}
				checkSessionAudit(t, g, logs, written)
			})
		})
	}
}

func checkSessionAudit(t *testing.T, g *app.Gateway, logs *lockedBuffer, written events.SessionEvents) {
	ctx := context.Background()
	admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "ops", TTL: time.Hour, TokenType: tokens.TypeService,
		Scopes: []string{auth.ScopeSessionsWrite, auth.ScopeSessionsRead}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + admin.Token
	do := func(want int, method, path, body string, hdr ...string) map[string]any {
		t.Helper()
		rec := serve(g, method, path, body, hdr...)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
		}
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return m
	}
	login := func(user string) (id, token string) {
		m := do(201, "POST", "/v1/sessions", `{"userId":"`+user+`","authLevel":"BASIC"}`, "Authorization", bearer)
		return m["sessionId"].(string), m["token"].(string)
	}
	challenge := func(id string) (challengeID, code string) {
		m := do(201, "POST", "/v1/sessions/"+id+"/mfa/challenge", "", "Authorization", bearer)
		return m["challengeId"].(string), m["code"].(string)
	}
	verify := func(want int, id, challengeID, code string) map[string]any {
		return do(want, "POST", "/v1/sessions/"+id+"/mfa/verify", `{"challengeId":"`+challengeID+`","code":"`+code+`"}`, "Authorization", bearer)
	}

	alice, _ := login("alice")
	cid, code := challenge(alice)
	verify(200, alice, cid, code)
	cid, code = challenge(alice)
	wrong := fmt.Sprintf("%06d", (atoi(code)+1)%1_000_000)
	for range 3 { // the verify above was the window's first attempt
		verify(422, alice, cid, wrong)
	}
	verify(422, alice, cid, wrong) // the window's last attempt: the user is locked
	verify(429, alice, cid, code)
	aliceToken := do(200, "POST", "/v1/sessions/"+alice+"/rotate", "", "Authorization", bearer)["token"].(string)
	do(204, "DELETE", "/v1/session", "", "X-Session-Token", aliceToken)

	bob1, _ := login("bob")
	bob2, _ := login("bob")
	do(200, "DELETE", "/v1/users/bob/sessions", "", "Authorization", bearer)
	carol1, _ := login("carol")
	time.Sleep(3 * time.Millisecond) // the oldest by Redis's clock (milliseconds)
	carol2, _ := login("carol")
	time.Sleep(3 * time.Millisecond)
	carol3, _ := login("carol") // the cap is 2: carol1 is evicted
	do(204, "DELETE", "/v1/sessions/"+carol2, "", "Authorization", bearer)

	tokenActor, aliceActor := "token:"+admin.TokenID, "session:"+alice
	bobRef, _ := session.ParseID(bob1)
	// A revoke-all is one line per session with its events written, else one of the user.
	bobRevoked := []auditLine{{"audit", "session.revoked", "acme", tokenActor, bobRef.Tag, "success", 2}}
	if written.Writes(events.SessionRevoked) {
		bobRevoked = []auditLine{{"audit", "session.revoked", "acme", tokenActor, bob1, "success", 1},
			{"audit", "session.revoked", "acme", tokenActor, bob2, "success", 1}}
	}
	want := []auditLine{
		{"audit", "session.created", "acme", tokenActor, alice, "success", 1},
		{"audit", "session.mfa_challenged", "acme", tokenActor, alice, "success", 1},
		{"audit", "session.mfa_verified", "acme", tokenActor, alice, "success", 1},
		{"audit", "session.mfa_challenged", "acme", tokenActor, alice, "success", 1},
		{"audit", "session.mfa_failed", "acme", tokenActor, alice, "failure", 1}, // the next 3 aggregated
		{"audit", "session.mfa_locked", "acme", tokenActor, alice, "failure", 1},
		{"audit", "session.rotated", "acme", tokenActor, alice, "success", 1},
		{"audit", "session.logged_out", "acme", aliceActor, alice, "success", 1},
		{"audit", "session.created", "acme", tokenActor, bob1, "success", 1},
		{"audit", "session.created", "acme", tokenActor, bob2, "success", 1},
	}
	want = append(want, bobRevoked...)
	want = append(want, []auditLine{
		{"audit", "session.created", "acme", tokenActor, carol1, "success", 1},
		{"audit", "session.created", "acme", tokenActor, carol2, "success", 1},
		{"audit", "session.evicted", "acme", tokenActor, carol1, "success", 1},
		{"audit", "session.created", "acme", tokenActor, carol3, "success", 1},
		{"audit", "session.revoked", "acme", tokenActor, carol2, "success", 1},
	}...)
	var lines []auditLine
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		lines = lines[:0]
		for _, l := range strings.Split(logs.String(), "\n") {
			var a auditLine
			if json.Unmarshal([]byte(l), &a) == nil && a.Msg == "audit" && strings.HasPrefix(a.Event, "session.") {
				lines = append(lines, a)
			}
		}
		if len(lines) >= len(want) || time.Now().After(deadline) { // the relay logs after its copy
			break
		}
	}
	if written != events.SessionEventsOff { // the relay keeps each user's order, not the order across users or sources
		key := func(a auditLine) string { return fmt.Sprint(a) }
		slices.SortStableFunc(lines, func(a, b auditLine) int { return strings.Compare(key(a), key(b)) })
		slices.SortStableFunc(want, func(a, b auditLine) int { return strings.Compare(key(a), key(b)) })
	}
	if len(lines) != len(want) {
		t.Fatalf("%d session audit lines, want %d:\n%+v\nlog:\n%s", len(lines), len(want), lines, logs.String())
	}
	for i, w := range want {
		if got := lines[i]; got != w {
			t.Errorf("audit line %d: %+v, want %+v", i, got, w)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
