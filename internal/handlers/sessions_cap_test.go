package handlers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/testredis"
)

// At GATEWAY_SESSION_MAX_PER_USER (50 here) a new login is not locked out by abandoned
// sessions: it succeeds and the least recently used session goes, its token refused at once
// (cached or not); the user still holds 50 sessions.
func TestSessionCapEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, mode := range []string{"uncached", "cached"} {
			t.Run(b.Name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				var h *harness
				if mode == "cached" {
					h, _ = sessionHarnessCached(t, b, time.Minute)
				} else {
					h, _ = sessionHarness(t, b)
				}
				const limit = 50
				var toks []SessionToken
				for i := range limit {
					toks = append(toks, h.createSession("acme", "alice", nil))
					if i == 0 {
						time.Sleep(2 * time.Millisecond) // last use is known to the millisecond
					}
				}
				oldest := toks[0]
				for range 2 { // cached where the backend can
					if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", oldest.Token); rec.Code != 200 {
						t.Fatalf("oldest before: %d %s", rec.Code, rec.Body)
					}
				}
				rec := h.do("POST", "/v1/sessions", map[string]any{"userId": "alice", "authLevel": "BASIC"},
					"Authorization", h.bearer("acme", "sessions:write"))
				if rec.Code != http.StatusCreated {
					t.Fatalf("login at the cap: %d %s", rec.Code, rec.Body)
				}
				var fresh SessionToken
				decode(t, rec, &fresh)
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", oldest.Token), 401, "invalid-credentials")
				for _, tok := range append(toks[1:], fresh) {
					if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token); rec.Code != 200 {
						t.Fatalf("%s was evicted instead: %d %s", tok.SessionId, rec.Code, rec.Body)
					}
				}
				rec = h.do("GET", "/v1/users/alice/sessions", nil, "Authorization", h.bearer("acme", "sessions:read"))
				if rec.Code != 200 || strings.Count(rec.Body.String(), `"sessionId"`) != limit || strings.Contains(rec.Body.String(), oldest.SessionId) {
					t.Fatalf("list after the eviction: %d", rec.Code)
				}
			})
		}
	}
}

// With GATEWAY_SESSION_LIMIT_POLICY=refuse a login at the cap is refused with a problem type of
// its own (422 session-limit-reached) and nothing changes: every session still works.
func TestSessionCapRefusePolicy(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, b, func(h *harness, d *Deps) {
				svc, _ := newSessionServiceWith(t, h.store, h.prefix, func(o *sessionstore.SessionOptions) {
					o.MaxPerUser, o.LimitPolicy = 3, sessionstore.LimitRefuse
				})
				d.Sessions, d.SessionAuth = svc, svc
			})
			var toks []SessionToken
			for range 3 {
				toks = append(toks, h.createSession("acme", "alice", nil))
			}
			p := wantProblem(t, h.do("POST", "/v1/sessions", map[string]any{"userId": "alice", "authLevel": "BASIC"},
				"Authorization", h.bearer("acme", "sessions:write")), 422, "session-limit-reached")
			if !strings.Contains(p.Detail, "3 live sessions") {
				t.Fatalf("detail %q", p.Detail)
			}
			for _, tok := range toks {
				if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok.Token); rec.Code != 200 {
					t.Fatalf("%s: %d %s", tok.SessionId, rec.Code, rec.Body)
				}
			}
			// Another user of the tenant is not affected.
			h.createSession("acme", "bob", nil)
		})
	}
}
