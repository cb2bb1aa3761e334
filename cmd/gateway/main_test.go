package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/client"
	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
)

// syncBuffer is a goroutine-safe buffer for the server's stdout/stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startGateway(t *testing.T, env map[string]string) (addr string, stdout, stderr *syncBuffer) {
	t.Helper()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	if env["GATEWAY_ADDR"] == "" {
		env["GATEWAY_ADDR"] = "127.0.0.1:0"
	}
	if env["GATEWAY_ADMIN_ADDR"] == "" {
		env["GATEWAY_ADMIN_ADDR"] = "127.0.0.1:0"
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveWith(ctx, config.Env{Lookup: func(k string) string { return env[k] }}, names, stdout, stderr, ready)
	}()
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("gateway exited: %v\n%s", err, stderr)
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("gateway did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway stopped with %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not shut down")
		}
	})
	return addr, stdout, stderr
}

// adminAddr is the operator listener's address from the start log.
func adminAddr(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	m := regexp.MustCompile(`"msg":"operator listener","addr":"([^"]+)"`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no operator listener in the log:\n%s", stderr)
	}
	return m[1]
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEmbeddedGatewayStartsAndAuthenticates(t *testing.T) {
	t.Parallel()
	addr, stdout, stderr := startGateway(t, map[string]string{})
	base := "http://" + addr
	if code, _ := get(t, base+"/healthz", ""); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, body := get(t, base+"/readyz", ""); code != 200 || body != `{"status":"ok"}`+"\n" {
		t.Fatalf("readyz %d %s", code, body)
	}
	if code, _ := get(t, base+"/metrics", ""); code != 404 {
		t.Fatalf("/metrics on the API port: %d", code)
	}
	ops := "http://" + adminAddr(t, stderr)
	if code, body := get(t, ops+"/readyz", ""); code != 200 || !strings.Contains(body, `"embedded":true`) {
		t.Fatalf("operator readyz %d %s", code, body)
	}
	if code, body := get(t, ops+"/metrics", ""); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("operator metrics %d", code)
	}
	if code, body := get(t, base+"/openapi.yaml", ""); code != 200 || !strings.Contains(body, "/v1/authorize") {
		t.Fatalf("openapi %d", code)
	}
	m := regexp.MustCompile(`export HG_TOKEN=(\S+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no bootstrap token printed:\n%s", stdout)
	}
	token := m[1]
	// The banner links the interactive reference, and the link works.
	if !strings.Contains(stdout.String(), base+"/docs") {
		t.Fatalf("the banner does not link the API reference %s/docs:\n%s", base, stdout)
	}
	if code, body := get(t, base+"/docs", ""); code != 200 || !strings.Contains(body, "swagger-ui") {
		t.Fatalf("docs %d", code)
	}
	ctx := context.Background()
	if _, err := client.Check(apiClient(t, addr, token).ListTokensWithResponse(ctx, nil)); err != nil {
		t.Fatalf("bootstrap token refused: %v", err)
	}
	for _, bad := range []string{"made.up.token", token[:len(token)-4] + "AAAA"} {
		var p *client.Problem
		if _, err := client.Check(apiClient(t, addr, bad).ListTokensWithResponse(ctx, nil)); !errors.As(err, &p) || p.Status != 401 {
			t.Fatalf("token %.12s...: %v", bad, err)
		}
	}
	logs := stderr.String()
	if !strings.Contains(logs, "EMBEDDED STORE") {
		t.Fatal("embedded mode is not announced in the log")
	}
	if strings.Contains(logs, token) {
		t.Fatal("the bootstrap token reached the log")
	}
}

func TestRunSubcommands(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, io.Discard); err != nil || !strings.Contains(out.String(), "hashgate") {
		t.Fatalf("version: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"keygen"}, func(string) string { return "" }, &out, io.Discard); err != nil ||
		!strings.Contains(out.String(), "GATEWAY_SIGNING_KEYS=") || !strings.Contains(out.String(), "GATEWAY_HMAC_KEY=") {
		t.Fatalf("keygen: %v %q", err, out.String())
	}
	dir := t.TempDir()
	for i := 0; i < 2; i++ { // the second run keeps the files
		if err := run(context.Background(), []string{"keygen", "--dir", dir}, func(string) string { return "" }, io.Discard, io.Discard); err != nil {
			t.Fatalf("keygen --dir: %v", err)
		}
	}
	files := map[string]string{"GATEWAY_REDIS_TIMEOUT": "1s", "REDIS_URL": "redis://127.0.0.1:1",
		"GATEWAY_SIGNING_KEYS_FILE": dir + "/signing-keys", "GATEWAY_HMAC_KEY_FILE": dir + "/hmac-key"}
	cfg, err := config.Load(func(k string) string { return files[k] })
	if err != nil || cfg.SigningKeys == "" || cfg.HMACKey == "" {
		t.Fatalf("config from key files: %v", err)
	}
	if _, _, err := app.Keys(cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("keys from files do not parse: %v", err)
	}
	if err := run(context.Background(), []string{"bogus"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil {
		t.Fatal("unknown command accepted")
	}
	if err := run(context.Background(), []string{"token", "mint"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil {
		t.Fatal("mint without flags accepted")
	}
	if err := run(context.Background(), []string{"token", "mint", "--tenant", "t", "--scope", "tokens:read"}, func(string) string { return "" }, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("mint in embedded mode: %v", err)
	}
	bad := map[string]string{"GATEWAY_REDIS_TIMEOUT": "never"}
	if err := run(context.Background(), nil, func(k string) string { return bad[k] }, io.Discard, io.Discard); err == nil {
		t.Fatal("bad config accepted")
	}
}
