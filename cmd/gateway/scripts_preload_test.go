package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/ratelimit/ratesync"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The gateway loads every Lua script at start, so the first call of each script is an EVALSHA
// that finds it: no NOSCRIPT error (which would also be an error span) and no EVAL fallback.
// It runs on a private Redis 8 whose script cache is flushed before the gateway starts (the
// shared servers' caches are left alone).
func TestScriptsPreloadedAtStart(t *testing.T) {
	t.Parallel()
	if os.Getenv(testredis.EnvRedis8Server) == "" {
		t.Skipf("%s is unset", testredis.EnvRedis8Server)
	}
	srv := testredis.StartServer(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{strings.TrimPrefix(srv.URL(), "redis://")}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for _, cmd := range []rueidis.Completed{c.B().ScriptFlush().Build(), c.B().ConfigResetstat().Build()} {
		if err := c.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	bodies := append(repo.ScriptBodies(), ratesync.ScriptBodies()...)
	shas := make([]string, len(bodies))
	for i, b := range bodies {
		sum := sha1.Sum([]byte(b))
		shas[i] = hex.EncodeToString(sum[:])
	}
	if exists, err := c.Do(ctx, c.B().ScriptExists().Sha1(shas...).Build()).AsIntSlice(); err != nil || len(exists) != len(shas) || slices.Contains(exists, 1) {
		t.Fatalf("script cache not empty before start: %v %v", exists, err)
	}

	var keys bytes.Buffer
	if err := run(ctx, []string{"keygen"}, func(string) string { return "" }, &keys, io.Discard); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "bootstrap-token")
	env := map[string]string{"REDIS_URL": srv.URL(), "GATEWAY_KEY_PREFIX": testredis.Prefix(t), "GATEWAY_BOOTSTRAP_TOKEN_FILE": tokenFile}
	for _, line := range strings.Split(strings.TrimSpace(keys.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	addr, _, _ := startGateway(t, env)

	// Every script is in the server's cache once the gateway is up, including those no request
	// has run yet.
	exists, err := c.Do(ctx, c.B().ScriptExists().Sha1(shas...).Build()).AsIntSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exists {
		if e != 1 {
			t.Errorf("script %d (%.60q…) not loaded at start", i, bodies[i])
		}
	}

	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(string(raw))
	base := "http://" + addr
	for _, op := range []struct {
		path string
		body any
	}{
		{"/v1/sessions", map[string]any{"userId": "alice", "authLevel": "BASIC"}},
		{"/v1/tokens", map[string]any{"subject": "svc-b", "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "service"}},
		{"/v1/quotes", map[string]any{"customerId": "cust-7", "salesChannel": "web", "currency": "EUR"}},
		{"/v1/cases", map[string]any{"subjectRef": "order/42", "assignedTeam": "ops", "dueAt": time.Now().Add(time.Hour).Format(time.RFC3339), "reason": "late"}},
	} {
		b, _ := json.Marshal(op.body)
		req, _ := http.NewRequest("POST", base+op.path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", op.path, resp.StatusCode, body)
		}
	}

	info := func(section string) string {
		s, err := c.Do(ctx, c.B().Info().Section(section).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if es := info("errorstats"); strings.Contains(es, "NOSCRIPT") {
		t.Errorf("NOSCRIPT errors after start:\n%s", es)
	}
	cs := info("commandstats")
	if !strings.Contains(cs, "cmdstat_evalsha:calls=") {
		t.Fatalf("no EVALSHA ran: the operations did not reach the scripts?\n%s", cs)
	}
	for _, line := range strings.Split(cs, "\n") {
		if strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_eval_ro:") {
			t.Errorf("a script fell back to EVAL: %s", strings.TrimSpace(line))
		}
		if strings.HasPrefix(line, "cmdstat_evalsha") && (!strings.Contains(line, "failed_calls=0") || !strings.Contains(line, "rejected_calls=0")) {
			t.Errorf("failed EVALSHA calls: %s", strings.TrimSpace(line))
		}
	}
}
