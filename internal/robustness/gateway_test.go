package robustness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// gateway is one replica of the whole HTTP stack, built through internal/app as cmd/gateway
// builds it and served on its own loopback listener. The replicas share keys and a key
// prefix, as the replicas of one deployment do.
type gateway struct {
	srv    *httptest.Server
	client *http.Client
	tokens *tokens.Service
	store  *store.Store
	app    *app.Gateway
	dead   atomic.Bool // killed: clients send it nothing more
}

// requestTimeout bounds every HTTP call: a call still running then is recorded as a result
// the client never learned.
const requestTimeout = 5 * time.Second

// sweepInterval is the replicas' GATEWAY_CASE_SWEEP_INTERVAL: short, so overdue cases are
// escalated during a short run.
const sweepInterval = 200 * time.Millisecond

// gatewayConfig is the replicas' configuration over url: GATEWAY_DURABLE_REPLICAS=durable,
// GATEWAY_CASE_SWEEP_INTERVAL=sweepInterval, the request-rate limits lifted (the main
// workload is one tenant; the rate-limits model has replicas of its own, see ratelimit_test.go)
// and the documented defaults otherwise.
func gatewayConfig(t *testing.T, url, durable string) config.Config {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatalf("config defaults: %v", err)
	}
	cfg.RedisURL, cfg.RedisTimeout, cfg.KeyPrefix = url, time.Second, testredis.Prefix(t)
	cfg.DurableReplicas, cfg.DurableTimeout = durable, time.Second
	cfg.RateLimitPerToken, cfg.RateLimitPerTenant, cfg.RateLimitPerSession = "0", "0", "0"
	cfg.CaseSweepInterval = sweepInterval
	return cfg
}

// startGateways builds n replicas with cfg, sharing its keys and prefix, and runs their
// background loops (the case sweeper, the rate limiter's flush).
func startGateways(t *testing.T, cfg config.Config, n int) []*gateway {
	t.Helper()
	authority, hasher, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*gateway, n)
	for i := range out {
		d := cfg.Durability()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := store.Open(ctx, store.Options{URL: cfg.RedisURL, Timeout: cfg.RedisTimeout, DisableCache: !cfg.RedisClientCache,
			ProbePrefix: cfg.KeyPrefix, Durability: &store.Durability{Replicas: d.Replicas, Timeout: d.Timeout, CredentialsOnly: d.CredentialsOnly}})
		if err == nil {
			t.Cleanup(s.Close)
			err = s.LoadScripts(ctx, app.ScriptBodies()...)
		}
		cancel()
		if err != nil {
			t.Fatalf("gateway %d store: %v", i, err)
		}
		gw, err := app.New(cfg, s, app.Options{Version: "robustness", Auth: authority, Hasher: hasher})
		if err != nil {
			t.Fatal(err)
		}
		gw.Start()
		t.Cleanup(gw.Stop)
		g := &gateway{tokens: gw.Tokens, store: s, app: gw, srv: httptest.NewUnstartedServer(gw.Echo),
			client: &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
		g.srv.Config.ReadHeaderTimeout, g.srv.Config.WriteTimeout = cfg.ReadHeaderTimeout, cfg.WriteTimeout
		g.srv.Start()
		t.Cleanup(g.srv.Close)
		t.Cleanup(g.client.CloseIdleConnections)
		out[i] = g
	}
	return out
}

// bearer mints a root service token for tenant (setup only: the workload goes over HTTP).
func (g *gateway) bearer(t *testing.T, tenant string, scopes ...string) string {
	t.Helper()
	out, err := g.tokens.Mint(context.Background(), tokens.MintRequest{Tenant: tenant, Subject: "svc-robustness",
		Scopes: scopes, TTL: time.Hour, TokenType: tokens.TypeService})
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	return "Bearer " + out.Token
}

// reply is one HTTP exchange as the client saw it; status 0 is a transport failure.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request; body is nil or a value sent as JSON (as merge-patch with mergePatch);
// headers are name, value pairs. It is safe for concurrent use.
func (g *gateway) do(method, path string, body any, headers ...string) reply {
	var r io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, g.srv.URL+path, r)
	if err != nil {
		return reply{}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return reply{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func (r reply) decode(v any) error { return json.Unmarshal(r.body, v) }

// kill stops the replica abruptly, in process: its listener and every open connection are
// closed at once (requests in flight get no answer) and its Redis connections dropped, with
// no draining; its background loops (the sweeper) end with it. Clients send it nothing more.
func (g *gateway) kill() {
	g.dead.Store(true)
	g.srv.Listener.Close()
	g.srv.CloseClientConnections()
	g.store.Close()
	g.app.Stop()
}
