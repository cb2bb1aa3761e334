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
	opts, err := cli.NewProjectOptions([]string{"docker-compose.yml"}, cli.WithName("hashgate"), cli.WithWorkingDirectory("."),
		cli.WithEnv([]string{}), cli.WithDiscardEnvFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
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
	if redis.HealthCheck == nil || !slices.Contains(redis.HealthCheck.Test, "redis-cli") || redis.HealthCheck.Interval == nil {
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
		"REDIS_URL":                    "redis://redis:6379",
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
