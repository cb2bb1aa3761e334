package app_test

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestWebhookDeliveryMetricsOnTheOperatorListener: a receiver on loopback refuses the first
// attempts (502), then accepts; the operator's /metrics then counts the attempts by result,
// the settled outcomes (retried, then delivered), and holds the attempt duration and the
// delivery lag histograms.
func TestWebhookDeliveryMetricsOnTheOperatorListener(t *testing.T) {
	t.Parallel()
	b := testredis.Named(t, "redis8")
	cfg := defaults(t)
	cfg.RedisURL, cfg.WebhookAllowPrivate, cfg.WebhookRetryBase = b.URL, true, 100*time.Millisecond
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{ServiceName: "hashgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := store.Open(ctx, app.StoreOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	a, h, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := app.New(cfg, s, app.Options{Telemetry: tel, Auth: a, Hasher: h})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(g.Stop)
	rcv := newHookReceiver(t)
	rcv.set(func() { rcv.failing = true })
	rcv.register(t, g, "token.*")
	if _, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "svc", Scopes: []string{"tokens:read"}, TTL: time.Hour,
		TokenType: tokens.TypeService}); err != nil {
		t.Fatal(err)
	}
	// metric sums the samples of name whose labels hold label (name="value", or "" for any).
	metric := func(text, name, label string) float64 {
		sum := 0.0
		for _, m := range sample.FindAllStringSubmatch(text, -1) {
			if m[1] == name && strings.Contains(m[2], label) {
				v, _ := strconv.ParseFloat(m[3], 64)
				sum += v
			}
		}
		return sum
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		g.Admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	_ = poll(t, 10*time.Second, func() bool { return metric(scrape(), "hashgate_webhook_deliveries_total", `outcome="retried"`) >= 1 })
	rcv.set(func() { rcv.failing = false })
	rcv.waitAll(t, g)
	var text string
	_ = poll(t, 10*time.Second, func() bool {
		text = scrape()
		return metric(text, "hashgate_webhook_deliveries_total", `outcome="delivered"`) >= 1
	})
	for _, want := range []struct{ name, label string }{
		{"hashgate_webhook_delivery_attempts_total", `result="http_error"`},
		{"hashgate_webhook_delivery_attempts_total", `result="success"`},
		{"hashgate_webhook_deliveries_total", `outcome="retried"`},
		{"hashgate_webhook_deliveries_total", `outcome="delivered"`},
		{"hashgate_webhook_delivery_duration_seconds_count", `result="http_error"`},
		{"hashgate_webhook_delivery_duration_seconds_count", `result="success"`},
		{"hashgate_webhook_delivery_lag_seconds_count", ""},
	} {
		if got := metric(text, want.name, want.label); got < 1 {
			t.Errorf("%s{%s} = %v, want at least 1", want.name, want.label, got)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", regexp.MustCompile(`(?m)^hashgate_webhook.*$`).FindAllString(text, -1))
	}
}

// sample is one line of Prometheus text: name, labels, value.
var sample = regexp.MustCompile(`(?m)^([a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$`)

// poll calls cond until it holds or within passes; it reports whether it held.
func poll(t *testing.T, within time.Duration, cond func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
