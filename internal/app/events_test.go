package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// lockedBuffer collects log lines from concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLogged starts a gateway of cfg over s (in the per-session layout where s cannot host
// the per-user one), logging as JSON into the buffer it returns; the test's end stops it.
func startLogged(t *testing.T, cfg config.Config, s *store.Store) (*app.Gateway, *lockedBuffer) {
	t.Helper()
	if sessionstore.Hosts(s.Caps, sessionstore.LayoutPerUser) != nil {
		cfg.SessionLayout = "per-session"
	}
	logs := &lockedBuffer{}
	g, err := app.New(cfg, s, app.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(g.Stop)
	return g, logs
}

// TestSessionEventsReachTheTenantStream: the session writes of the HTTP API (create, rotate,
// logout) reach GET /v1/events through the outbox and the relay, each once, with the caller as
// actor; each is an audit log line too, and refused authentications are logged aggregated.
// No session token (nor its verifier) and no bearer is in any stream or in the log.
func TestSessionEventsReachTheTenantStream(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		cfg := defaults(t)
		cfg.KeyPrefix = prefix
		cfg.SessionEvents = "all"
		g, logs := startLogged(t, cfg, s)
		ctx := context.Background()
		admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "ops", TTL: time.Hour, TokenType: tokens.TypeService,
			Scopes: []string{auth.ScopeSessionsWrite, auth.ScopeEventsRead}})
		if err != nil {
			t.Fatal(err)
		}
		do := func(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
			return serve(g, method, path, body, hdr...)
		}
		bearer := "Bearer " + admin.Token
		rec := do("POST", "/v1/sessions", `{"userId":"alice","authLevel":"BASIC"}`, "Authorization", bearer)
		var created struct{ SessionId, Token string }
		if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &created) != nil {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		rec = do("POST", "/v1/sessions/"+created.SessionId+"/rotate", "", "Authorization", bearer)
		var rotated struct{ Token string }
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &rotated) != nil {
			t.Fatalf("rotate: %d %s", rec.Code, rec.Body)
		}
		if rec = do("DELETE", "/v1/session", "", "X-Session-Token", rotated.Token); rec.Code != 204 {
			t.Fatalf("logout: %d %s", rec.Code, rec.Body)
		}
		for range 5 {
			do("GET", "/v1/events", "", "Authorization", "Bearer not-a-jwt")
		}
		want := []string{"session.created", "session.rotated", "session.logged_out"}
		var got []map[string]any
		for deadline := time.Now().Add(5 * time.Second); ; {
			rec = do("GET", "/v1/events?type=session.created,session.rotated,session.logged_out", "", "Authorization", bearer)
			var page struct{ Items []map[string]any }
			if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &page) != nil {
				t.Fatalf("list: %d %s", rec.Code, rec.Body)
			}
			if got = page.Items; len(got) >= len(want) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(got) != len(want) {
			t.Fatalf("events %v, want %v once each", got, want)
		}
		for i, w := range want {
			if got[i]["type"] != w || got[i]["subject"] != created.SessionId {
				t.Fatalf("event %d: %v, want %s of %s", i, got[i], w, created.SessionId)
			}
		}
		if got[0]["actor"] != "token:"+admin.TokenID || got[2]["actor"] != "session:"+created.SessionId {
			t.Fatalf("actors: %v, %v", got[0]["actor"], got[2]["actor"])
		}
		// hgs_<tag>_<selector>_<verifier>: the verifier is the fourth part (it may hold '_' itself).
		verifier := func(tok string) string { return strings.SplitN(tok, "_", 4)[3] }
		secrets := []string{created.Token, rotated.Token, verifier(created.Token), verifier(rotated.Token), admin.Token, "alice"}
		for _, n := range s.Client.Nodes() {
			keys, err := n.Do(ctx, n.B().Keys().Pattern(prefix+":v1:ev*").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				typ, _ := n.Do(ctx, n.B().Type().Key(k).Build()).ToString()
				if typ != "stream" {
					continue
				}
				entries, _ := n.Do(ctx, n.B().Xrange().Key(k).Start("-").End("+").Build()).AsXRange()
				for _, e := range entries {
					for f, v := range e.FieldValues {
						for _, sec := range secrets {
							if strings.Contains(v, sec) {
								t.Fatalf("%s field %s holds a secret or a raw user id", k, f)
							}
						}
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond) // (the relay logs after its copy)
		log := logs.String()
		for _, sec := range secrets[:5] {
			if strings.Contains(log, sec) {
				t.Fatal("the log holds a secret")
			}
		}
		audits, refused := 0, 0
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, `"msg":"audit"`) && strings.Contains(line, created.SessionId) {
				audits++
			}
			if strings.Contains(line, `"msg":"audit"`) && strings.Contains(line, `"event":"auth.invalid-credentials"`) {
				refused++
			}
		}
		if audits != 3 || refused != 1 {
			t.Fatalf("%d audit lines of the session (want 3), %d of the 5 refused requests (want 1, aggregated):\n%s", audits, refused, log)
		}
	})
}
