package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// restartGateway starts the gateway on env, waits until it serves, and stops it.
func restartGateway(t *testing.T, env map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	stderr := &syncBuffer{}
	go func() { done <- serve(ctx, func(k string) string { return env[k] }, &syncBuffer{}, stderr, ready) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("gateway exited: %v\n%s", err, stderr)
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("gateway stopped with %v", err)
	}
}

// liveBootstrapTokens are the ids of the tenant's live bootstrap admin tokens.
func liveBootstrapTokens(t *testing.T, base, token string) []string {
	t.Helper()
	code, body := get(t, base+"/v1/tokens?limit=100", token)
	if code != 200 {
		t.Fatalf("list tokens: %d %s", code, body)
	}
	var page struct {
		Items []struct {
			TokenID string `json:"tokenId"`
			Subject string `json:"subject"`
			Revoked bool   `json:"revoked"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, it := range page.Items {
		if it.Subject == bootstrapSubject && !it.Revoked {
			live = append(live, it.TokenID)
		}
	}
	return live
}

// Restarts with GATEWAY_BOOTSTRAP_TOKEN_FILE keep the file's token while it is live instead of
// minting another all-scope token each time (4 live after 4 starts before); once it is
// revoked, or the file holds a token the keys do not verify, a start mints a new one, and a
// token that verifies but is no longer fit (another bootstrap tenant) is revoked when replaced.
func TestBootstrapTokenKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	env, tokenFile := redisGatewayEnv(t)
	env["GATEWAY_ADMIN_ADDR"] = "127.0.0.1:0"
	env["GATEWAY_ADDR"] = "127.0.0.1:0"
	read := func() string {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	restartGateway(t, env)
	first := read()
	for i := 0; i < 3; i++ {
		restartGateway(t, env)
		if got := read(); got != first {
			t.Fatalf("start %d replaced a live bootstrap token", i+2)
		}
	}
	addr, _, _ := startGateway(t, env)
	base := "http://" + addr
	if read() != first {
		t.Fatal("a fifth start replaced the live bootstrap token")
	}
	if live := liveBootstrapTokens(t, base, first); len(live) != 1 {
		t.Fatalf("%d live bootstrap tokens after 5 starts, want 1: %v", len(live), live)
	}

	// Revoked: the next start mints a new one, which works; the old one stays refused.
	ids := liveBootstrapTokens(t, base, first)
	r, _ := http.NewRequest("DELETE", base+"/v1/tokens/"+ids[0], nil)
	r.Header.Set("Authorization", "Bearer "+first)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code := resp.StatusCode; code != 204 {
		t.Fatalf("revoke the bootstrap token: %d", code)
	}
	restartGateway(t, env)
	second := read()
	if second == first {
		t.Fatal("a revoked bootstrap token was kept")
	}
	if code, _ := get(t, base+"/v1/tokens", second); code != 200 {
		t.Fatalf("the new bootstrap token: %d", code)
	}

	// A verified token of another bootstrap tenant is replaced and revoked.
	other := map[string]string{}
	for k, v := range env {
		other[k] = v
	}
	other["GATEWAY_BOOTSTRAP_TENANT"] = "other"
	restartGateway(t, other)
	if read() == second {
		t.Fatal("a token of another bootstrap tenant was kept")
	}
	if code, _ := get(t, base+"/v1/tokens", second); code != 401 {
		t.Fatalf("the replaced bootstrap token answers %d, want 401 (revoked)", code)
	}

	// Garbage in the file: a new token, no error.
	if err := os.WriteFile(tokenFile, []byte("not-a-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	restartGateway(t, env)
	if got := read(); got == "not-a-token" {
		t.Fatal("garbage kept as the bootstrap token")
	}
	if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("bootstrap token file mode %v", fi.Mode().Perm())
	}
}

// A bootstrap token file inside a checkout (./bootstrap-token, as the README once said) is
// warned about at start; one outside is not.
func TestBootstrapTokenFileInACheckoutWarned(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	for file, warned := range map[string]bool{filepath.Join(repo, "bootstrap-token"): true, filepath.Join(t.TempDir(), "bootstrap-token"): false} {
		_, _, stderr := startGateway(t, map[string]string{"GATEWAY_BOOTSTRAP_TOKEN_FILE": file})
		if got := strings.Contains(stderr.String(), "inside a checkout"); got != warned {
			t.Errorf("%s: warned %v, want %v\n%s", file, got, warned, stderr)
		}
	}
}
