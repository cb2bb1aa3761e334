package hashgate_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// No Docker engine runs here, so the compose file is checked with the compose-spec loader:
// it must parse, and wire Redis, the gateway and Jaeger the way the README promises.
func TestComposeFile(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	svc := func(name string) types.ServiceConfig {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		return s
	}
	redis, gw, jaeger, keys := svc("redis"), svc("gateway"), svc("jaeger"), svc("keys")

	if !strings.HasPrefix(redis.Image, "redis:8") {
		t.Errorf("redis image %q is not Redis 8", redis.Image)
	}
	if cmd := strings.Join(redis.Command, " "); !strings.Contains(cmd, "--appendonly yes") {
		t.Errorf("redis command %q lacks append-only persistence", cmd)
	}
	if redis.HealthCheck == nil || !strings.Contains(strings.Join(redis.HealthCheck.Test, " "), "redis-cli") || redis.HealthCheck.Interval == nil {
		t.Errorf("redis healthcheck = %+v", redis.HealthCheck)
	}
	if d, ok := gw.DependsOn["redis"]; !ok || d.Condition != types.ServiceConditionHealthy {
		t.Errorf("gateway must wait for a healthy redis: %+v", gw.DependsOn)
	}
	if d, ok := gw.DependsOn["keys"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("gateway must wait for its keys: %+v", gw.DependsOn)
	}
	if gw.Build == nil || gw.Build.Context == "" {
		t.Error("gateway is not built from this repository")
	}
	env := func(s types.ServiceConfig, k string) string {
		if v, ok := s.Environment[k]; ok && v != nil {
			return *v
		}
		return ""
	}
	for k, want := range map[string]string{
		"REDIS_URL":                    "redis://hashgate@redis:6379",
		"GATEWAY_REDIS_PASSWORD_FILE":  "/run/secrets/redis-password",
		"GATEWAY_ADMIN_ADDR":           ":9090",
		"OTEL_EXPORTER_OTLP_ENDPOINT":  "http://jaeger:4318",
		"GATEWAY_ADDR":                 ":8080",
		"GATEWAY_BOOTSTRAP_TOKEN_FILE": "/run/hashgate/bootstrap-token",
		"GATEWAY_SIGNING_KEYS_FILE":    "/secrets/signing-keys",
		"GATEWAY_HMAC_KEY_FILE":        "/secrets/hmac-key",
	} {
		if got := env(gw, k); got != want {
			t.Errorf("gateway %s = %q, want %q", k, got, want)
		}
	}
	if gw.HealthCheck == nil || !slices.Contains(gw.HealthCheck.Test, "healthcheck") {
		t.Errorf("gateway healthcheck = %+v", gw.HealthCheck)
	}
	if !slices.Contains(keys.Command, "keygen") {
		t.Errorf("keys command = %v", keys.Command)
	}
	if env(jaeger, "COLLECTOR_OTLP_ENABLED") != "true" {
		t.Error("jaeger does not accept OTLP")
	}
	published := func(s types.ServiceConfig, port uint32) bool {
		for _, p := range s.Ports {
			if p.Target == port && p.Published != "" {
				return true
			}
		}
		return false
	}
	if !published(gw, 8080) || !published(jaeger, 16686) || !published(jaeger, 4318) {
		t.Errorf("ports: gateway %+v jaeger %+v", gw.Ports, jaeger.Ports)
	}
	for _, s := range []types.ServiceConfig{redis, gw, jaeger} {
		for _, p := range s.Ports {
			if p.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %d on %q, want loopback only", s.Name, p.Target, p.HostIP)
			}
		}
	}
	checkComposeHardening(t, p, redis, gw, keys)
}

// Redis is reachable only on the compose network and only with a password: an ACL user whose
// password comes from a compose secret, the default user off. The gateway's container is
// read-only, without capabilities or privilege escalation; keys and gateway run one image,
// built once; the operator listener is published on loopback only.
func checkComposeHardening(t *testing.T, p *types.Project, redis, gw, keys types.ServiceConfig) {
	t.Helper()
	if len(redis.Ports) > 0 {
		t.Errorf("redis is published on the host: %+v", redis.Ports)
	}
	secret, ok := p.Secrets["redis-password"]
	if !ok || secret.File == "" {
		t.Fatalf("no redis-password secret from a file: %+v", p.Secrets)
	}
	uses := func(s types.ServiceConfig) bool {
		return slices.ContainsFunc(s.Secrets, func(r types.ServiceSecretConfig) bool { return r.Source == "redis-password" })
	}
	if !uses(redis) || !uses(gw) {
		t.Errorf("redis-password not given to redis and gateway: %+v %+v", redis.Secrets, gw.Secrets)
	}
	cmd := strings.Join(redis.Command, " ")
	for _, want := range []string{"user default off", "user hashgate on", "/run/secrets/redis-password", "--aclfile"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("redis command lacks %q: %s", want, cmd)
		}
	}
	if hc := strings.Join(redis.HealthCheck.Test, " "); !strings.Contains(hc, "REDISCLI_AUTH") || !strings.Contains(hc, "--user hashgate") {
		t.Errorf("redis healthcheck does not authenticate: %s", hc)
	}
	for _, s := range []types.ServiceConfig{gw, keys} {
		if !s.ReadOnly {
			t.Errorf("%s: root file system not read_only", s.Name)
		}
		if !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("%s: cap_drop %v, want [ALL]", s.Name, s.CapDrop)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: security_opt %v lacks no-new-privileges:true", s.Name, s.SecurityOpt)
		}
	}
	if !slices.ContainsFunc(gw.Tmpfs, func(m string) bool { return strings.HasPrefix(m, "/tmp") }) {
		t.Errorf("gateway has no tmpfs at /tmp: %v", gw.Tmpfs)
	}
	if gw.Image == "" || keys.Image != gw.Image {
		t.Errorf("keys (%q) and gateway (%q) do not run one image", keys.Image, gw.Image)
	}
	if (gw.Build == nil) == (keys.Build == nil) {
		t.Error("the image must be built by exactly one of keys and gateway")
	}
	admin := slices.IndexFunc(gw.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 9090 })
	if admin < 0 || gw.Ports[admin].HostIP != "127.0.0.1" {
		t.Errorf("operator listener not published on loopback: %+v", gw.Ports)
	}
}

// The bootstrap token, the compose secrets and the key files never enter git or an image.
func TestIgnoreFilesCoverSecrets(t *testing.T) {
	t.Parallel()
	for _, f := range []string{".gitignore", ".dockerignore"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(b))
		for _, want := range []string{"bootstrap-token", "hashgate.env", "/.secrets", "signing-keys", "hmac-key"} {
			if !slices.Contains(lines, want) {
				t.Errorf("%s does not ignore %s", f, want)
			}
		}
	}
}

func TestDockerfileBuildsStaticNonRoot(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"CGO_ENABLED=0", "AS build", "USER 65532:65532", "./cmd/gateway", "ENTRYPOINT [\"/gateway\"]"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if strings.Count(df, "FROM ") < 2 {
		t.Error("Dockerfile is not multi-stage")
	}
}

// loadCompose loads docker-compose.yml with the compose-spec loader, as `docker compose` would
// (no environment, no .env file).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"}, cli.WithName("hashgate"), cli.WithWorkingDirectory("."),
		cli.WithEnv([]string{}), cli.WithDiscardEnvFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}
