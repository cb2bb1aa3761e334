package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// gateway is the whole HTTP stack over one Redis deployment, built through internal/app as
// cmd/gateway builds it, with the gateway's configuration defaults, served over loopback.
type gateway struct {
	t       *testing.T
	cfg     config.Config
	store   *store.Store
	tokens  *tokens.Service
	keys    repo.Keys
	auth    *auth.Authority
	hasher  *keyhash.Hasher
	srv     *httptest.Server
	client  *http.Client
	timeout time.Duration
}

// hangGuard bounds every HTTP call of the tests: a request still running then is reported as a
// hang instead of blocking the test.
const hangGuard = 15 * time.Second

// startGateway wires the gateway over url (standalone redis:// URL or a cluster seed list) with
// timeout as GATEWAY_REDIS_TIMEOUT; everything is closed at cleanup.
func startGateway(t *testing.T, url string, timeout time.Duration) *gateway {
	t.Helper()
	return startGatewayWith(t, url, timeout, nil)
}

// startGatewayWith is startGateway with edit applied to the configuration first (nil: none).
func startGatewayWith(t *testing.T, url string, timeout time.Duration, edit func(*config.Config)) *gateway {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" }) // the documented defaults
	if err != nil {
		t.Fatalf("config defaults: %v", err)
	}
	cfg.RedisURL, cfg.RedisTimeout, cfg.KeyPrefix = url, timeout, testredis.Prefix(t)
	if edit != nil {
		edit(&cfg)
	}
	g := &gateway{t: t, cfg: cfg, timeout: timeout, keys: repo.Keys{Prefix: cfg.KeyPrefix}}
	if g.auth, g.hasher, err = app.FreshKeys(cfg); err != nil {
		t.Fatal(err)
	}
	g.open(t)
	return g
}

// restart builds the gateway again over the same deployment, configuration and keys, as a
// restarted gateway process (what it learns at start is learned anew); the old one is closed at
// cleanup.
func (g *gateway) restart(t *testing.T) { g.open(t) }

// open connects the store, builds the stack through internal/app and serves it.
func (g *gateway) open(t *testing.T) {
	t.Helper()
	cfg, d := g.cfg, g.cfg.Durability()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var err error
	g.store, err = store.Open(ctx, store.Options{URL: cfg.RedisURL, Timeout: cfg.RedisTimeout, DisableCache: !cfg.RedisClientCache,
		ProbePrefix: cfg.KeyPrefix, Durability: &store.Durability{Replicas: d.Replicas, Timeout: d.Timeout, CredentialsOnly: d.CredentialsOnly, UnconfirmedReads: d.UnconfirmedReads}})
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	t.Cleanup(g.store.Close)
	if err := g.store.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		t.Fatalf("load scripts: %v", err)
	}
	// Built as cmd/gateway builds it (internal/app), client-side caching of the session hot
	// path and the token check included. The case sweeper is not started; the relay of the
	// session events is.
	gw, err := app.New(cfg, g.store, app.Options{Version: "faults", Auth: g.auth, Hasher: g.hasher})
	if err != nil {
		t.Fatal(err)
	}
	relayCtx, stopRelay := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); gw.Relay.Run(relayCtx) }()
	t.Cleanup(func() { stopRelay(); <-relayDone })
	g.tokens = gw.Tokens
	g.srv = httptest.NewUnstartedServer(gw.Echo)
	g.srv.Config.ReadHeaderTimeout = cfg.ReadHeaderTimeout
	g.srv.Config.WriteTimeout = cfg.WriteTimeout
	g.srv.Start()
	t.Cleanup(g.srv.Close)
	g.client = &http.Client{Timeout: hangGuard, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	t.Cleanup(g.client.CloseIdleConnections)
}

// bearer issues a service token for tenant through the token service (so its revocation
// metadata exists and the token check passes, as for a token issued by POST /v1/tokens).
func (g *gateway) bearer(tenant string, scopes ...string) string {
	g.t.Helper()
	out, err := g.tokens.Mint(context.Background(), tokens.MintRequest{Tenant: tenant, Subject: "svc-faults",
		Scopes: scopes, TTL: time.Hour, TokenType: tokens.TypeService})
	if err != nil {
		g.t.Fatalf("mint: %v", err)
	}
	return "Bearer " + out.Token
}

// reply is one HTTP exchange as a client saw it.
type reply struct {
	status int
	header http.Header
	body   []byte
	start  time.Time
	took   time.Duration
	err    error // transport failure, including the hang guard
}

// do sends one request; body is nil or a value sent as JSON; headers are name, value pairs.
// It is safe for concurrent use and never calls t.Fatal, so load goroutines can use it.
func (g *gateway) do(method, path string, body any, headers ...string) reply {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return reply{err: err}
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, g.srv.URL+path, r)
	if err != nil {
		return reply{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	out := reply{start: time.Now()}
	resp, err := g.client.Do(req)
	if err == nil {
		out.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		out.status, out.header = resp.StatusCode, resp.Header
	}
	out.took, out.err = time.Since(out.start), err
	return out
}

func (r reply) String() string {
	if r.err != nil {
		return fmt.Sprintf("transport error after %v: %v", r.took.Round(time.Millisecond), r.err)
	}
	b := string(r.body)
	if len(b) > 300 {
		b = b[:300] + "…"
	}
	return fmt.Sprintf("%d after %v: %s", r.status, r.took.Round(time.Millisecond), strings.TrimSpace(b))
}

// decode unmarshals a 2xx body into v.
func (r reply) decode(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode %s: %w", r, err)
	}
	return nil
}

// unavailable checks r is the gateway's 503 answer: an RFC 9457 problem of type
// .../unavailable with status 503 and a Retry-After header of whole seconds.
func (r reply) unavailable() error {
	if r.err != nil || r.status != http.StatusServiceUnavailable {
		return fmt.Errorf("want a 503 problem, got %s", r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("503 with content type %q: %s", ct, r)
	}
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.Status != 503 || !strings.HasSuffix(p.Type, "/unavailable") {
		return fmt.Errorf("503 body is not an unavailable problem: %s", r)
	}
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		return fmt.Errorf("503 without a valid Retry-After (%q): %s", r.header.Get("Retry-After"), r)
	}
	return nil
}

// pollUntil calls cond every few milliseconds until it returns true, failing the test with
// what when the deadline passes first.
func pollUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
