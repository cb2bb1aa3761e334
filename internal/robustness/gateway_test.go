package robustness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// gateway is one replica of the whole HTTP stack: built through internal/app as cmd/gateway
// builds it and served on its own loopback listener (in process), or the built cmd/gateway
// run as a process of its own (proc, process_test.go), which a fault can SIGKILL and restart.
// The replicas share keys and a key prefix, as the replicas of one deployment do.
type gateway struct {
	url    string // http://host:port
	client *http.Client
	// In process only: the listener, the services, the store.
	srv    *httptest.Server
	tokens *tokens.Service
	store  *store.Store
	app    *app.Gateway
	proc   *gatewayProc
	dead   atomic.Bool // killed: clients send it nothing until it is back
}

// requestTimeout bounds every HTTP call: a call still running then is recorded as a result
// the client never learned.
const requestTimeout = 5 * time.Second

// sweepInterval is the replicas' GATEWAY_CASE_SWEEP_INTERVAL: short, so overdue cases are
// escalated during a short run.
const sweepInterval = 200 * time.Millisecond

// gatewaySpec is one replica's configuration: the environment variables cmd/gateway reads
// (the same for a replica in process, through config.Load), and, in process only, the
// loopback address its Redis connections leave from (so a proxy can partition it apart).
type gatewaySpec struct {
	env    map[string]string
	source string // "" : the default (127.0.0.1)
	clock  *steppedClock
}

// gatewayConfig is the replicas' configuration over url: GATEWAY_DURABLE_REPLICAS=durable,
// GATEWAY_CASE_SWEEP_INTERVAL=sweepInterval, GATEWAY_SESSION_MAX_PER_USER=sessionCap (the
// eviction workload; every other user has one session), the request-rate limits lifted (the main
// workload is one tenant; the rate-limits model has replicas of its own, see ratelimit_test.go),
// fresh signing and HMAC keys and a key prefix of its own, and the documented defaults
// otherwise.
func gatewayConfig(t *testing.T, url, durable string) gatewaySpec {
	t.Helper()
	ks, err := auth.GenerateKeySet()
	if err != nil {
		t.Fatal(err)
	}
	_, hmacKey, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return gatewaySpec{env: map[string]string{
		"REDIS_URL": url, "GATEWAY_REDIS_TIMEOUT": "1s", "GATEWAY_KEY_PREFIX": testredis.Prefix(t),
		"GATEWAY_DURABLE_REPLICAS": durable, "GATEWAY_DURABLE_TIMEOUT": "1s",
		"GATEWAY_RATE_LIMIT_PER_TOKEN": "0", "GATEWAY_RATE_LIMIT_PER_TENANT": "0", "GATEWAY_RATE_LIMIT_PER_SESSION": "0",
		"GATEWAY_CASE_SWEEP_INTERVAL": sweepInterval.String(), "GATEWAY_SESSION_MAX_PER_USER": strconv.Itoa(sessionCap),
		"GATEWAY_SIGNING_KEYS": ks.SeedString(), "GATEWAY_HMAC_KEY": hmacKey,
	}}
}

// with is a copy of s with name set to value.
func (s gatewaySpec) with(name, value string) gatewaySpec {
	env := maps.Clone(s.env)
	env[name] = value
	return gatewaySpec{env: env, source: s.source, clock: s.clock}
}

// config is s as the gateway reads it.
func (s gatewaySpec) config(t *testing.T) config.Config {
	t.Helper()
	cfg, err := config.Load(func(name string) string { return s.env[name] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// startGateways builds a replica in process for each spec and runs its background loops (the
// case sweeper, the rate limiter's flush).
func startGateways(t *testing.T, specs ...gatewaySpec) []*gateway {
	t.Helper()
	out := make([]*gateway, len(specs))
	for i, spec := range specs {
		cfg := spec.config(t)
		d := cfg.Durability()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		s, err := store.Open(ctx, store.Options{URL: cfg.RedisURL, Timeout: cfg.RedisTimeout, DisableCache: !cfg.RedisClientCache,
			ProbePrefix: cfg.KeyPrefix, Durability: &store.Durability{Replicas: d.Replicas, Timeout: d.Timeout, CredentialsOnly: d.CredentialsOnly, NoAOF: d.NoAOF, UnconfirmedReads: d.UnconfirmedReads},
			NewClient: fromAddress(spec.source)})
		if err == nil {
			t.Cleanup(s.Close)
			err = s.LoadScripts(ctx, app.ScriptBodies()...)
		}
		cancel()
		if err != nil {
			t.Fatalf("gateway %d store: %v", i, err)
		}
		var now func() time.Time
		if spec.clock != nil {
			now = spec.clock.now
		}
		gw, err := app.New(cfg, s, app.Options{Version: "robustness", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		gw.Start()
		t.Cleanup(gw.Stop)
		g := &gateway{tokens: gw.Tokens, store: s, app: gw, srv: httptest.NewUnstartedServer(gw.Echo), client: newClient()}
		g.srv.Config.ReadHeaderTimeout, g.srv.Config.WriteTimeout = cfg.ReadHeaderTimeout, cfg.WriteTimeout
		g.srv.Start()
		g.url = g.srv.URL
		t.Cleanup(g.srv.Close)
		t.Cleanup(g.client.CloseIdleConnections)
		out[i] = g
	}
	return out
}

// steppedClock is a gateway's clock that a fault steps (app.Options.Now: the JWT authority
// and the token checks). Its readings carry no monotonic part, so every comparison the
// gateway makes between them sees a step too (a real step of the system clock moves only
// the wall clock, which Go's comparisons of time.Now readings ignore): harsher than a real
// step.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.offset.Load()))
}

// step moves the clock by d.
func (c *steppedClock) step(d time.Duration) { c.offset.Add(int64(d)) }

// newClient is a client's HTTP client for one replica.
func newClient() *http.Client {
	return &http.Client{Timeout: requestTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// fromAddress builds the store's Redis client with every connection (to Redis and to the
// Sentinels) leaving from the loopback address ip; "" keeps the default.
func fromAddress(ip string) func(rueidis.ClientOption) (rueidis.Client, error) {
	return func(o rueidis.ClientOption) (rueidis.Client, error) {
		if ip != "" {
			local := &net.TCPAddr{IP: net.ParseIP(ip)}
			o.Dialer.LocalAddr, o.Sentinel.Dialer.LocalAddr = local, local
		}
		return rueidis.NewClient(o)
	}
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
	req, err := http.NewRequest(method, g.url+path, r)
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

// kill stops the replica abruptly: a process gets SIGKILL (sigkill, process_test.go); in
// process, its listener and every open connection are closed at once (requests in flight get
// no answer) and its Redis connections dropped, with no draining; its background loops (the
// sweeper) end with it. Clients send it nothing more.
func (g *gateway) kill() {
	if g.proc != nil {
		g.sigkill()
		return
	}
	g.dead.Store(true)
	g.srv.Listener.Close()
	g.srv.CloseClientConnections()
	g.store.Close()
	g.app.Stop()
}
