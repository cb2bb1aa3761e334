package handlers

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/testredis"
)

// assertionClaim is one string claim of the X-Auth-Assertion in rec (the signature is the auth
// package's tests' concern).
func assertionClaim(t *testing.T, rec interface{ Header() http.Header }, name string) string {
	t.Helper()
	parts := strings.Split(rec.Header().Get("X-Auth-Assertion"), ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q", rec.Header().Get("X-Auth-Assertion"))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	v, _ := c[name].(string)
	return v
}

// A session answered from the gateway's decoded copy hands out the assertion kept with that
// copy (the same one on every request), and only while the copy states the session as it is:
// after an MFA step-up the assertion states MFA, and a revoked session gets 401, never the
// kept assertion.
func TestAuthorizeAssertionFollowsTheSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	s := h.createSession("acme", "alice", nil)
	authorize := func(token string, want int) headerRec {
		t.Helper()
		rec := h.do("GET", "/v1/authorize", nil, SessionHeaderName, token)
		if rec.Code != want {
			t.Fatalf("authorize: %d, want %d: %s", rec.Code, want, rec.Body)
		}
		return headerRec(rec.Header())
	}
	first := authorize(s.Token, http.StatusOK)
	for range 5 {
		if again := authorize(s.Token, http.StatusOK); again.get() != first.get() {
			t.Fatal("a hot session was given a new assertion within its life")
		}
	}
	if lvl := assertionClaim(t, first, "level"); lvl != "BASIC" {
		t.Fatalf("level claim %q", lvl)
	}
	c := h.challenge("acme", s.SessionId)
	rec := h.verify("acme", s.SessionId, c.ChallengeId, c.Code)
	if rec.Code != http.StatusOK {
		t.Fatalf("verify: %d %s", rec.Code, rec.Body)
	}
	var up MfaVerified
	decode(t, rec, &up)
	stepped := authorize(up.Token, http.StatusOK)
	if stepped.get() == first.get() || assertionClaim(t, stepped, "level") != "MFA" {
		t.Fatalf("after the step-up: level claim %q", assertionClaim(t, stepped, "level"))
	}
	authorize(up.Token, http.StatusOK) // (kept again)
	if rec := h.do("DELETE", "/v1/sessions/"+s.SessionId, nil, "Authorization", h.bearer("acme", "sessions:write")); rec.Code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
	}
	authorize(up.Token, http.StatusUnauthorized)
}

// headerRec is an answer's headers, with the recorder's Header method.
type headerRec http.Header

func (h headerRec) Header() http.Header { return http.Header(h) }

func (h headerRec) get() string { return http.Header(h).Get("X-Auth-Assertion") }
