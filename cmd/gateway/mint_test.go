package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// `gateway token mint` makes a root token: it holds tokens:admin whatever --scope names, and
// no act claim (nothing minted it).
func TestMintedCLITokenIsAdmin(t *testing.T) {
	t.Parallel()
	env, _ := redisGatewayEnv(t)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"token", "mint", "--tenant", "acme", "--scope", "tokens:write", "--ttl", "10m"},
		func(k string) string { return env[k] }, &out, io.Discard); err != nil {
		t.Fatalf("mint: %v", err)
	}
	tok := strings.TrimSpace(out.String())
	recordSecret(tok)
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Scope string          `json:"scope"`
		Act   json.RawMessage `json:"act"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Scope != "tokens:write tokens:admin" || claims.Act != nil {
		t.Fatalf("CLI token claims scope %q act %s, want tokens:write tokens:admin and no act", claims.Scope, claims.Act)
	}
}
