package hashgate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// The ACL the compose Redis builds from its secret, applied to a real Redis 8: the gateway,
// connecting as in compose (REDIS_URL with the user, GATEWAY_REDIS_PASSWORD_FILE), starts and
// serves a token, a session, a revocation and the operator's readiness; the default user and
// a wrong password are refused, and so are the admin commands.
func TestComposeRedisACLServesTheGateway(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	redis, _ := p.GetService("redis")
	m := regexp.MustCompile(`printf '([^']*)'`).FindStringSubmatch(strings.Join(redis.Command, " "))
	if m == nil {
		t.Fatalf("no ACL printf in the redis command: %v", redis.Command)
	}
	dir := t.TempDir()
	password := "compose-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sum := sha256.Sum256([]byte(password))
	acl := strings.ReplaceAll(strings.Replace(m[1], "%s", hex.EncodeToString(sum[:]), 1), `\n`, "\n")
	aclFile, pwFile := filepath.Join(dir, "users.acl"), filepath.Join(dir, "redis-password")
	if err := os.WriteFile(aclFile, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testredis.StartServer(t, "--aclfile", aclFile)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	env := map[string]string{"REDIS_URL": "redis://hashgate@127.0.0.1:" + strconv.Itoa(srv.Port), "GATEWAY_REDIS_PASSWORD_FILE": pwFile,
		"GATEWAY_SIGNING_KEYS": "-", "GATEWAY_HMAC_KEY": "-"}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(ctx, app.StoreOptions(cfg))
	if err != nil {
		t.Fatalf("the gateway cannot connect as the compose ACL user: %v", err)
	}
	defer s.Close()
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		t.Fatalf("load scripts as the ACL user: %v", err)
	}
	a, h, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := app.New(cfg, s, app.Options{Auth: a, Hasher: h})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: "acme", Subject: "ops", TokenType: tokens.TypeService,
		Scopes: auth.KnownScopes(), TTL: time.Hour})
	if err != nil {
		t.Fatalf("mint as the ACL user: %v", err)
	}
	do := func(h http.Handler, method, path, body string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			t.Logf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Code
	}
	if code := do(g.Echo, "POST", "/v1/sessions", `{"userId":"alice","authLevel":"BASIC"}`); code != 201 {
		t.Errorf("create a session: %d", code)
	}
	if code := do(g.Echo, "DELETE", "/v1/users/alice/sessions", ""); code != 200 {
		t.Errorf("revoke the user's sessions (durable write): %d", code)
	}
	if code := do(g.Echo, "DELETE", "/v1/tokens/"+admin.TokenID, ""); code != 204 {
		t.Errorf("revoke a token: %d", code)
	}
	if code := do(g.Admin, "GET", "/readyz", ""); code != 200 {
		t.Errorf("operator readiness (INFO, ROLE): %d", code)
	}

	// Refused: the default user, a wrong password, an admin command.
	for name, url := range map[string]string{
		"default user":   "redis://127.0.0.1:" + strconv.Itoa(srv.Port),
		"wrong password": "redis://hashgate:nope@127.0.0.1:" + strconv.Itoa(srv.Port),
	} {
		if bad, err := store.Open(ctx, store.Options{URL: url, Timeout: time.Second}); err == nil {
			bad.Close()
			t.Errorf("%s connected", name)
		}
	}
	if err := s.Client.Do(ctx, s.Client.B().ConfigSet().ParameterValue().ParameterValue("appendonly", "no").Build()).Error(); err == nil {
		t.Error("the gateway's ACL user may CONFIG SET")
	}
}
