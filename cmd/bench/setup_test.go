package main

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	gwconfig "github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestSetUpAgainstALiveGateway runs every gateway scenario's set-up (sessions, tokens, MFA
// challenges, quotes with items, cases: all through the public Go client) against the whole
// gateway on real Redis 8, at a small size, and probes each script it produced with its first
// request, so a set-up broken by a change of the contract fails the suite, not only `make bench`.
func TestSetUpAgainstALiveGateway(t *testing.T) {
	t.Parallel()
	b := testredis.Backends()[1] // redis8
	if b.Name != "redis8" {
		t.Fatalf("backend %s, want redis8", b.Name)
	}
	s := testredis.Open(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	cfg, err := gwconfig.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.KeyPrefix, cfg.CaseMaxEscalation = testredis.Prefix(t), caseMaxEscalation
	g, err := app.New(cfg, s, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: cfg.BootstrapTenant, Subject: "bench-admin",
		TokenType: tokens.TypeService, Scopes: auth.KnownScopes(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Echo)
	defer srv.Close()

	a, err := newAPI(srv.URL, admin.Token)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixtures{api: a, rateHint: func() float64 { return 1 },
		cfg: config{threads: 1, connections: 3, sessions: 5, warmup: time.Second, duration: time.Second}}
	for _, p := range f.gatewayPlans() {
		warm, measure, err := p.prepare(ctx)
		if err != nil {
			t.Errorf("%s: set-up: %v", p.Key, err)
			continue
		}
		if len(warm.Items) == 0 || len(measure.Items) == 0 {
			t.Errorf("%s: empty script", p.Key)
			continue
		}
		if err := probe(ctx, srv.URL, measure, p.Expect); err != nil {
			t.Errorf("%s: probe: %v", p.Key, err)
		}
	}
	if f.quoteItems != 3 || len(f.sessions) != 5 || f.device.Token == "" || len(f.bearers) != 4 {
		t.Errorf("fixtures: %d quote items, %d sessions, device %v, %d bearers", f.quoteItems, len(f.sessions), f.device.Token != "", len(f.bearers))
	}
	recordSecrets(f)
}

// recordSecrets appends the fixtures' tokens to HASHGATE_SECRETS_FILE (scripts/test.sh), so the
// keyspace audit after the suite proves none reached Redis.
func recordSecrets(f *fixtures) {
	path := os.Getenv("HASHGATE_SECRETS_FILE")
	if path == "" {
		return
	}
	out, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer out.Close()
	for _, s := range append(f.sessions, f.device) {
		_, _ = out.WriteString("token " + s.Token + "\n")
	}
	for _, b := range append([]string{f.api.token}, f.bearers...) {
		_, _ = out.WriteString("token " + b + "\n")
	}
}
