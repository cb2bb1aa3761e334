package app_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/testredis"
)

func defaults(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.KeyPrefix = testredis.Prefix(t)
	return cfg
}

// A gateway missing a service does not start: New names what is missing, instead of a server
// that answers that service's operations with a per-request 501.
func TestNewRefusesAMissingService(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	cases := map[string]func(*handlers.Deps){
		"Quotes":      func(d *handlers.Deps) { d.Quotes = nil },
		"Cases":       func(d *handlers.Deps) { d.Cases = nil },
		"Webhooks":    func(d *handlers.Deps) { d.Webhooks = nil },
		"Tokens":      func(d *handlers.Deps) { d.Tokens = nil },
		"Sessions":    func(d *handlers.Deps) { d.Sessions = nil },
		"SessionAuth": func(d *handlers.Deps) { d.SessionAuth = nil },
		"TokenCheck":  func(d *handlers.Deps) { d.TokenCheck = nil },
		"Auth":        func(d *handlers.Deps) { d.Auth = nil },
		"Store":       func(d *handlers.Deps) { d.Store = nil },
	}
	for name, drop := range cases {
		t.Run(name, func(t *testing.T) {
			g, err := app.New(defaults(t), s, app.Options{Override: drop})
			if err == nil {
				t.Fatalf("built a gateway without %s (server %p)", name, g.Server)
			}
			if !errors.Is(err, handlers.ErrMissingDependency) || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name %s", err, name)
			}
		})
	}
}

// The whole gateway builds from the configuration's defaults, and its loops stop cleanly.
func TestNewBuildsEveryService(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	g, err := app.New(defaults(t), s, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Echo == nil || g.Tokens == nil || g.Sessions == nil || g.Quotes == nil || g.Cases == nil || g.Sweeper == nil {
		t.Fatalf("incomplete gateway: %+v", g)
	}
	g.Start()
	g.Stop()
	g.Stop()
}

// A Redis that cannot host the configured session layout fails the start with a message that
// names GATEWAY_SESSION_LAYOUT, instead of the gateway switching layouts on its own: Redis 7.0
// has no hash field expiry, which the default per-user layout needs.
func TestNewRefusesASessionLayoutTheServerCannotHost(t *testing.T) {
	t.Parallel()
	b := testredis.Backends()[len(testredis.Backends())-1]
	if b.Name != "redis7" || b.URL == "" {
		t.Skip("no Redis 7.0 backend")
	}
	s := testredis.Open(t, b)
	if _, err := app.New(defaults(t), s, app.Options{}); err == nil || !strings.Contains(err.Error(), "GATEWAY_SESSION_LAYOUT=per-user") {
		t.Fatalf("default layout on Redis 7.0: err %v, want one naming GATEWAY_SESSION_LAYOUT", err)
	}
	cfg := defaults(t)
	cfg.SessionLayout = "per-session"
	if _, err := app.New(cfg, s, app.Options{}); err != nil {
		t.Fatalf("per-session on Redis 7.0: %v", err)
	}
}

// serve sends one request to g's API — with a JSON body unless body is empty, then the header
// pairs hdr (name, value, ...) — and returns the answer.
func serve(g *app.Gateway, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	g.Echo.ServeHTTP(rec, req)
	return rec
}
