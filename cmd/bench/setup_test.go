package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	gwconfig "github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
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
	// The gateway's keys and prefix in an environment, as the benchmark hands them to its
	// gateways: the scale set-up creates sessions in-process from the same environment.
	ks, err := auth.GenerateKeySet()
	if err != nil {
		t.Fatal(err)
	}
	_, hk, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_URL=" + b.URL, "GATEWAY_KEY_PREFIX=" + testredis.Prefix(t), "GATEWAY_SIGNING_KEYS=" + ks.SeedString(), "GATEWAY_HMAC_KEY=" + hk}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := gwconfig.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.CaseMaxEscalation = caseMaxEscalation
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
	f := &fixtures{api: a, rateHint: func() float64 { return 1 }, caseListN: 120,
		cfg: config{threads: 1, connections: 3, sessions: 5, warmup: time.Second, duration: time.Second}}
	var minted []string
	f.mint = func(ctx context.Context, tenant string) (string, error) {
		out, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: tenant, Subject: "bench", TokenType: tokens.TypeService,
			Scopes: []string{auth.ScopeCasesRead, auth.ScopeCasesWrite}, TTL: time.Hour})
		if err != nil {
			return "", err
		}
		minted = append(minted, out.Token)
		return out.Token, nil
	}
	for _, p := range append(f.gatewayPlans(), f.limitPlans()...) {
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
	// The paired rounds' fresh scripts (plan.again): two more runs of each such row, each
	// probed; case-escalate's in a tenant of their own each time.
	for _, p := range f.gatewayPlans() {
		for i := 0; p.again != nil && i < 2; i++ {
			s, err := p.again(ctx, srv.URL, 1)
			if err != nil {
				t.Errorf("%s: again %d: %v", p.Key, i+1, err)
			} else if err := probe(ctx, srv.URL, s, p.Expect); err != nil {
				t.Errorf("%s: again %d: probe: %v", p.Key, i+1, err)
			}
		}
	}
	if f.againRuns != 2 {
		t.Errorf("case-escalate's fresh runs minted %d tenants, want 2", f.againRuns)
	}
	if f.quoteItems != 3 || len(f.sessions) != 5 || f.device.Token == "" || len(f.bearers) != 4 {
		t.Errorf("fixtures: %d quote items, %d sessions, device %v, %d bearers", f.quoteItems, len(f.sessions), f.device.Token != "", len(f.bearers))
	}
	recordSecrets(f, append(minted, scaleSetUp(ctx, t, a, env, srv.URL)...)...)
}

// scaleSetUp is the scale scenarios' set-up at 24 sessions: 12 through POST /v1/sessions, 12
// more in this process from the gateway's environment (the default); every token must
// authorize on the gateway, and both shapes' scripts probe.
func scaleSetUp(ctx context.Context, t *testing.T, a *api, env []string, base string) []string {
	var retries atomic.Int64
	tokens, err := createScaleSessions(ctx, apiCreator(a), nil, 12, 4, &retries)
	if err != nil {
		t.Errorf("scale: API creation: %v", err)
		return nil
	}
	create, closeFn, err := repoCreator(ctx, env)
	if err != nil {
		t.Errorf("scale: repository creator: %v", err)
		return tokens
	}
	tokens, err = createScaleSessions(ctx, create, tokens, 24, 4, &retries)
	closeFn()
	if err != nil || len(tokens) != 24 {
		t.Errorf("scale: repository creation: %d tokens, %v", len(tokens), err)
		return tokens
	}
	for i, tok := range tokens {
		s := wrkScript{Method: "GET", Items: itemsWithHeader("/v1/authorize", "Cookie", sessionCookie+"=", []string{tok})}
		if err := probe(ctx, base, s, []int{200}); err != nil {
			t.Errorf("scale: session %d: %v", i, err)
		}
	}
	zipf, uniform := scaleScripts(tokens, 1000, 1)
	for _, s := range []wrkScript{zipf, uniform} {
		if _, err := renderScript(s, 2); err != nil {
			t.Errorf("scale: render: %v", err)
		}
		if err := probe(ctx, base, s, []int{200}); err != nil {
			t.Errorf("scale: probe: %v", err)
		}
	}
	if len(uniform.Sample.Tokens) != 24 || len(zipf.Sample.Seq) != 1000 {
		t.Errorf("scale scripts: uniform over %d, Zipf %d draws", len(uniform.Sample.Tokens), len(zipf.Sample.Seq))
	}
	return tokens
}

// recordSecrets appends the fixtures' tokens to HASHGATE_SECRETS_FILE (scripts/test.sh), so the
// keyspace audit after the suite proves none reached Redis.
func recordSecrets(f *fixtures, more ...string) {
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
	for _, b := range append(append([]string{f.api.token}, f.bearers...), more...) {
		_, _ = out.WriteString("token " + b + "\n")
	}
}
