package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
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

	addr, stdout, _ := startGateway(t, env)
	base := "http://" + addr
	if code, body := get(t, base+"/v1/tokens", minted); code != 200 || !strings.Contains(body, `"items"`) {
		t.Fatalf("minted token: %d %s", code, body)
	}
	boot, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("bootstrap token file: %v", err)
	}
	if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("bootstrap token file mode %v", fi.Mode().Perm())
	}
	if code, _ := get(t, base+"/v1/tokens", strings.TrimSpace(string(boot))); code != 200 {
		t.Fatalf("bootstrap token: %d", code)
	}
	if strings.Contains(stdout.String(), strings.TrimSpace(string(boot))) {
		t.Fatal("the bootstrap token was printed with a real Redis")
	}
	if code, _ := get(t, base+"/readyz", ""); code != 200 {
		t.Fatalf("readyz %d", code)
	}
}
