package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/client"
)

// Against a real Redis: `gateway token mint` issues a token whose metadata a serving gateway
// with the same keys accepts, the bootstrap token is written to its file, and a token the
// gateway did not issue is refused.
func TestMintAndServeAgainstRedis(t *testing.T) {
	t.Parallel()
	env, tokenFile := redisGatewayEnv(t)
	getenv := func(k string) string { return env[k] }

	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "mint", "--tenant", "acme", "--scope", "tokens:read tokens:write", "--ttl", "10m"}, getenv, &out, io.Discard); err != nil {
		t.Fatalf("mint: %v", err)
	}
	minted := strings.TrimSpace(out.String())

	addr, stdout, stderr := startGateway(t, env)
	ctx := context.Background()
	list, err := client.Check(apiClient(t, addr, minted).ListTokensWithResponse(ctx, nil))
	if err != nil || list.JSON200 == nil {
		t.Fatalf("minted token: %v", err)
	}
	boot, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("bootstrap token file: %v", err)
	}
	if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("bootstrap token file mode %v", fi.Mode().Perm())
	}
	if _, err := client.Check(apiClient(t, addr, strings.TrimSpace(string(boot))).ListTokensWithResponse(ctx, nil)); err != nil {
		t.Fatalf("bootstrap token: %v", err)
	}
	if strings.Contains(stdout.String(), strings.TrimSpace(string(boot))) {
		t.Fatal("the bootstrap token was printed with a real Redis")
	}
	var p *client.Problem
	if _, err := client.Check(apiClient(t, addr, minted[:len(minted)-4]+"AAAA").ListTokensWithResponse(ctx, nil)); !errors.As(err, &p) || p.Status != 401 {
		t.Fatalf("a token the gateway did not issue: %v", err)
	}
	if _, err := client.Check(apiClient(t, addr, "").GetReadyzWithResponse(ctx)); err != nil {
		t.Fatalf("readyz: %v", err)
	}
	if code, body := get(t, "http://"+adminAddr(t, stderr)+"/readyz", ""); code != 200 ||
		!strings.Contains(body, `"embedded":false`) || !strings.Contains(body, `"fieldExpiry":"hsetex"`) {
		t.Fatalf("operator readyz: %d %s", code, body)
	}
}
