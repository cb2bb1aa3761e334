package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// sessionModes are the hot path's two ways to read a session: a script per request, and
// through the client-side cache (and the decoded memo) where the backend has one.
var sessionModes = []struct {
	name     string
	cacheTTL time.Duration
}{{"uncached", 0}, {"cached", time.Minute}}

// Login-time MFA: a session created with mfaRequired is not logged in until its MFA is
// verified. Forward auth, whoami and the device operations refuse it with 401 mfa-required
// (however often it is asked, so a cached copy is no way around it); the MFA operations and
// logout accept it. After the verify the new token passes at level MFA at once, and the old
// one is simply invalid — no cached pre-verify decision is served for either.
func TestLoginTimeMFA(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, mode := range sessionModes {
			t.Run(b.Name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				h, _ := sessionHarnessCached(t, b, mode.cacheTTL)
				tok := h.createSession("acme", "alice", map[string]any{"mfaRequired": true})
				if tok.Status != SessionStatusMFAREQUIRED || tok.AuthLevel != AuthLevelBASIC {
					t.Fatalf("created %+v", tok)
				}
				refused := []struct{ method, path string }{
					{"GET", "/v1/authorize"}, {"GET", "/v1/authorize?level=BASIC"}, {"GET", "/v1/authorize?level=MFA"},
					{"GET", "/v1/session"}, {"GET", "/v1/session/devices"},
					{"DELETE", "/v1/session/devices/" + tok.SessionId}, {"DELETE", "/v1/session/devices"},
				}
				for range 3 { // the second and third rounds may come from the cache
					for _, r := range refused {
						for _, cred := range [][]string{{"X-Session-Token", tok.Token}, {"Cookie", cookie(tok.Token)}} {
							rec := h.do(r.method, r.path, nil, cred...)
							wantProblem(t, rec, 401, "mfa-required")
							if rec.Header().Get("X-Auth-Subject") != "" || rec.Header().Get("WWW-Authenticate") == "" {
								t.Fatalf("%s %s: headers %v", r.method, r.path, rec.Header())
							}
						}
					}
				}
				// Nothing was revoked by the refused device operations.
				rec := h.do("GET", "/v1/sessions/"+tok.SessionId, nil, "Authorization", h.bearer("acme", "sessions:read"))
				if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"MFA_REQUIRED"`) {
					t.Fatalf("admin view: %d %s", rec.Code, rec.Body)
				}

				c := h.challenge("acme", tok.SessionId)
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token), 401, "mfa-required")
				rec = h.verify("acme", tok.SessionId, c.ChallengeId, c.Code)
				var up MfaVerified
				decode(t, rec, &up)
				if rec.Code != 200 || up.Token == tok.Token {
					t.Fatalf("verify: %d %s", rec.Code, rec.Body)
				}
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token), 401, "invalid-credentials")
				for range 3 {
					rec = h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", up.Token)
					if rec.Code != 200 || rec.Header().Get("X-Auth-Level") != "MFA" || rec.Header().Get("X-Auth-Subject") != "alice" {
						t.Fatalf("authorize after verify: %d %v %s", rec.Code, rec.Header(), rec.Body)
					}
					rec = h.do("GET", "/v1/session", nil, "X-Session-Token", up.Token)
					if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"MFA_VERIFIED"`) {
						t.Fatalf("whoami after verify: %d %s", rec.Code, rec.Body)
					}
				}
				if rec := h.do("GET", "/v1/session/devices", nil, "X-Session-Token", up.Token); rec.Code != 200 {
					t.Fatalf("devices after verify: %d %s", rec.Code, rec.Body)
				}

				// Logout accepts a session whose login MFA is still pending.
				pending := h.createSession("acme", "alice", map[string]any{"mfaRequired": true})
				wantProblem(t, h.do("GET", "/v1/session", nil, "X-Session-Token", pending.Token), 401, "mfa-required")
				if rec := h.do("DELETE", "/v1/session", nil, "X-Session-Token", pending.Token); rec.Code != 204 {
					t.Fatalf("logout of a pending session: %d %s", rec.Code, rec.Body)
				}
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", pending.Token), 401, "invalid-credentials")
			})
		}
	}
}

// Step-up: a challenge started on an ACTIVE (logged-in) session keeps it logged in. BASIC
// resources and whoami still pass; ?level=MFA answers 403 step-up-required until the verify.
func TestStepUpKeepsBasicAccess(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, mode := range sessionModes {
			t.Run(b.Name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				h, _ := sessionHarnessCached(t, b, mode.cacheTTL)
				tok := h.createSession("acme", "bob", nil)
				c := h.challenge("acme", tok.SessionId)
				for range 3 {
					rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token)
					if rec.Code != 200 || rec.Header().Get("X-Auth-Level") != "BASIC" {
						t.Fatalf("BASIC during step-up: %d %s", rec.Code, rec.Body)
					}
					wantProblem(t, h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", tok.Token), 403, "step-up-required")
					rec = h.do("GET", "/v1/session", nil, "X-Session-Token", tok.Token)
					if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"MFA_REQUIRED"`) {
						t.Fatalf("whoami during step-up: %d %s", rec.Code, rec.Body)
					}
					if rec := h.do("GET", "/v1/session/devices", nil, "X-Session-Token", tok.Token); rec.Code != 200 {
						t.Fatalf("devices during step-up: %d %s", rec.Code, rec.Body)
					}
				}
				rec := h.verify("acme", tok.SessionId, c.ChallengeId, c.Code)
				var up MfaVerified
				decode(t, rec, &up)
				if rec.Code != 200 {
					t.Fatalf("verify: %d %s", rec.Code, rec.Body)
				}
				if rec := h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", up.Token); rec.Code != 200 {
					t.Fatalf("MFA after step-up: %d %s", rec.Code, rec.Body)
				}
			})
		}
	}
}

// The admin view of a session whose idleTimeoutMs is not a positive number is refused as the
// hot path refuses it: corrupt, never served with a default — answered as missing (404).
func TestGetSessionCorruptIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h, _ := sessionHarness(t, b)
			for _, bad := range []string{"soon", "", "0", "-5", "1.5"} {
				tok := h.createSession("acme", "alice", nil)
				ref, _ := session.ParseID(tok.SessionId)
				h.setSessionField(t, ref, "idleTimeoutMs", bad)
				r := h.bearer("acme", "sessions:read")
				wantProblem(t, h.do("GET", "/v1/sessions/"+tok.SessionId, nil, "Authorization", r), 404, "not-found")
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token), 401, "invalid-credentials")
				rec := h.do("GET", "/v1/users/alice/sessions", nil, "Authorization", r)
				if rec.Code != 200 || strings.Contains(rec.Body.String(), tok.SessionId) {
					t.Fatalf("%q: list serves the corrupt session: %d %s", bad, rec.Code, rec.Body)
				}
			}
		})
	}
}

// Sign out everywhere else: DELETE /v1/session/devices revokes every other session of the
// caller in one step and keeps the current one; other users are untouched; the revoked tokens
// answer 401 at once (cached or not); a second call revokes nothing.
func TestSignOutEverywhereElse(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, mode := range sessionModes {
			t.Run(b.Name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				h, _ := sessionHarnessCached(t, b, mode.cacheTTL)
				mine := h.createSession("acme", "alice", map[string]any{"device": map[string]any{"label": "laptop"}})
				others := []SessionToken{h.createSession("acme", "alice", nil), h.createSession("acme", "alice", nil)}
				bob := h.createSession("acme", "bob", nil)
				globex := h.createSession("globex", "alice", nil)
				all := append([]SessionToken{mine, bob, globex}, others...)
				for range 2 { // warm the cache where there is one
					for _, tok := range all {
						if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token); rec.Code != 200 {
							t.Fatalf("authorize before: %d %s", rec.Code, rec.Body)
						}
					}
				}
				rec := h.do("DELETE", "/v1/session/devices", nil, "Cookie", cookie(mine.Token))
				if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"revoked":2}` {
					t.Fatalf("sign out everywhere else: %d %s", rec.Code, rec.Body)
				}
				for _, tok := range others {
					wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token), 401, "invalid-credentials")
					wantProblem(t, h.do("GET", "/v1/session", nil, "X-Session-Token", tok.Token), 401, "invalid-credentials")
				}
				for _, tok := range []SessionToken{mine, bob, globex} {
					if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token); rec.Code != 200 {
						t.Fatalf("%s lost its session: %d %s", tok.SessionId, rec.Code, rec.Body)
					}
				}
				rec = h.do("GET", "/v1/session/devices", nil, "X-Session-Token", mine.Token)
				var devices SessionList
				decode(t, rec, &devices)
				if rec.Code != 200 || len(devices.Items) != 1 || devices.Items[0].SessionId != mine.SessionId {
					t.Fatalf("devices after: %d %s", rec.Code, rec.Body)
				}
				rec = h.do("DELETE", "/v1/session/devices", nil, "X-Session-Token", mine.Token)
				if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"revoked":0}` {
					t.Fatalf("again: %d %s", rec.Code, rec.Body)
				}
				wantProblem(t, h.do("DELETE", "/v1/session/devices", nil), 401, "")
				wantProblem(t, h.do("DELETE", "/v1/session/devices", nil, "Authorization", h.bearer("acme", "sessions:write")), 401, "")
				wantProblem(t, h.do("DELETE", "/v1/session/devices", nil, "X-Session-Token", others[0].Token), 401, "invalid-credentials")
			})
		}
	}
}
