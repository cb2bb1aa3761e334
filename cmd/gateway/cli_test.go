package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
)

// Every subcommand answers -h and --help with its usage and every one of its flags, exits 0
// (run returns nil) and does nothing else: serve does not start (no token printed), keygen
// writes no keys, healthcheck dials nothing, token mint mints nothing.
func TestEverySubcommandHelp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		flags []string
	}{
		{[]string{"serve"}, []string{"-env-file"}},
		{nil, []string{"-env-file"}}, // gateway --help is the command list
		{[]string{"token", "mint"}, []string{"-env-file", "-tenant", "-scope", "-ttl", "-subject", "-type", "-description"}},
		{[]string{"keygen"}, []string{"-dir", "-redis-url"}},
		{[]string{"healthcheck"}, []string{"-env-file", "-addr"}},
		{[]string{"config"}, []string{"-env-file"}},
		{[]string{"version"}, nil},
		{[]string{"rules"}, []string{"check", "explain"}},
		{[]string{"rules", "check"}, nil},
		{[]string{"rules", "explain"}, []string{"-method", "-host", "-uri", "-kind", "-level", "-tenant", "-groups", "-scopes"}},
	}
	for _, tc := range cases {
		for _, h := range []string{"--help", "-h"} {
			args := append(append([]string{}, tc.args...), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				// Settings that would make a real command act: a Redis to mint against, an
				// address to dial; the help must not reach them.
				env := map[string]string{"GATEWAY_ADDR": "127.0.0.1:1", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0"}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var out, errOut bytes.Buffer
				start := time.Now()
				err := run(ctx, args, func(k string) string { return env[k] }, &out, &errOut)
				if err != nil {
					t.Fatalf("exit with %v (not 0); stdout:\n%s", err, out.String())
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("took %v: the command ran", d)
				}
				got := out.String()
				if !strings.Contains(got, "usage:") {
					t.Fatalf("no usage:\n%s", got)
				}
				for _, f := range tc.flags {
					if !strings.Contains(got, f) {
						t.Errorf("flag %s not listed:\n%s", f, got)
					}
				}
				for _, acted := range []string{"HG_TOKEN", "GATEWAY_SIGNING_KEYS=", "eyJ"} {
					if strings.Contains(got, acted) || strings.Contains(errOut.String(), acted) {
						t.Errorf("--help acted (%q in the output):\n%s", acted, got)
					}
				}
				if errOut.Len() > 0 {
					t.Errorf("--help logged:\n%s", errOut.String())
				}
			})
		}
	}
}

// A misspelt GATEWAY_* variable is silently ignored no more: the start log names it and the
// known variable nearest to it.
func TestUnknownVariableWarnedWithNearestName(t *testing.T) {
	t.Parallel()
	_, _, stderr := startGateway(t, map[string]string{"GATEWAY_SESION_IDLE_TIMEOUT": "5m"})
	logs := stderr.String()
	if !strings.Contains(logs, `"name":"GATEWAY_SESION_IDLE_TIMEOUT","did_you_mean":"GATEWAY_SESSION_IDLE_TIMEOUT"`) {
		t.Fatalf("no warning naming GATEWAY_SESSION_IDLE_TIMEOUT:\n%s", logs)
	}
}

// `gateway config` prints every setting with its value, its default and where the value came
// from (env, env file, default); secrets are masked, misspelt names reported.
func TestConfigCommandShowsSourcesMasked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var keys bytes.Buffer
	if err := run(context.Background(), []string{"keygen", "--dir", dir, "--redis-url", "redis://app:s3cret@127.0.0.1:6379"}, func(string) string { return "" }, &keys, &keys); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(dir, "hashgate.env")
	f, err := os.OpenFile(envFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("GATEWAY_LOG_LEVEL=debug\nGATEWAY_QUOTE_TTL=1h\nGATEWAY_QOUTE_MAX_ITEMS=5\n")
	f.Close()
	hmac, _ := os.ReadFile(filepath.Join(dir, "hmac-key"))
	env := map[string]string{config.EnvFileVar: envFile, "GATEWAY_LOG_LEVEL": "warn"}
	var out bytes.Buffer
	if err := runEnv(context.Background(), []string{"config"}, environ{getenv: func(k string) string { return env[k] }}, &out, &out); err != nil {
		t.Fatalf("config: %v\n%s", err, out.String())
	}
	got := out.String()
	row := func(name string) []string {
		for _, l := range strings.Split(got, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return f
			}
		}
		t.Fatalf("no row for %s:\n%s", name, got)
		return nil
	}
	for name, want := range map[string][]string{
		"GATEWAY_LOG_LEVEL":            {"warn", "info", "env"},           // env beats the file
		"GATEWAY_QUOTE_TTL":            {"1h0m0s", "168h", "env", "file"}, // from the env file
		"GATEWAY_SESSION_IDLE_TIMEOUT": {"30m0s", "30m", "default"},
		"REDIS_URL":                    {"redis://app:***@127.0.0.1:6379", "-", "env", "file"},
		"GATEWAY_HMAC_KEY":             {"***", "-", "file", "named", "by", "GATEWAY_HMAC_KEY_FILE", "(env", "file)"},
	} {
		if r := row(name); strings.Join(r[1:], " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q, want %q", name, r[1:], want)
		}
	}
	if strings.Contains(got, "s3cret") || strings.Contains(got, strings.TrimSpace(string(hmac))) {
		t.Fatalf("a secret is printed:\n%s", got)
	}
	if !strings.Contains(got, "GATEWAY_QOUTE_MAX_ITEMS ignored: did you mean GATEWAY_QUOTE_MAX_ITEMS?") {
		t.Errorf("misspelt name not reported:\n%s", got)
	}
	// Every setting is listed.
	cfg, _ := config.Load(func(string) string { return "" })
	for _, s := range cfg.Settings(config.Env{Lookup: func(string) string { return "" }}) {
		row(s.Name)
	}
}

// With no REDIS_URL (the embedded store, which prints an admin token) and no GATEWAY_ADDR the
// gateway listens on loopback only; with REDIS_URL or an explicit address, where it is told.
func TestEmbeddedListensOnLoopbackByDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "127.0.0.1:8080"},
		{map[string]string{"GATEWAY_ADDR": ":9999"}, ":9999"},
		{map[string]string{"REDIS_URL": "redis://127.0.0.1:1", "GATEWAY_SIGNING_KEYS": "x", "GATEWAY_HMAC_KEY": "y"}, ":8080"},
	} {
		cfg, err := config.Load(func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Addr != tc.want {
			t.Errorf("%v: listens on %q, want %q", tc.env, cfg.Addr, tc.want)
		}
	}
	// The start log and the banner say who can connect.
	_, stdout, stderr := startGateway(t, map[string]string{})
	if !strings.Contains(stderr.String(), `"reach":"this machine only (loopback)"`) || !strings.Contains(stdout.String(), "this machine only") {
		t.Fatalf("the start does not say it listens on loopback only:\n%s\n%s", stdout, stderr)
	}
}
