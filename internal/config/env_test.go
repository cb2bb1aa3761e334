package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An env file: NAME=value lines, comments, blank lines, "export " and quotes; nothing expanded;
// a line that is not an assignment is refused with its number.
func TestReadEnvFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.env")
	_ = os.WriteFile(good, []byte("# comment\n\nREDIS_URL=redis://h:1\nexport GATEWAY_LOG_LEVEL=\"debug\"\nGATEWAY_KEY_PREFIX='a$HOME'\n"), 0o600)
	vars, err := ReadEnvFile(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"REDIS_URL": "redis://h:1", "GATEWAY_LOG_LEVEL": "debug", "GATEWAY_KEY_PREFIX": "a$HOME"}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s = %q, want %q", k, vars[k], v)
		}
	}
	bad := filepath.Join(dir, "bad.env")
	_ = os.WriteFile(bad, []byte("A=1\nnot an assignment\n"), 0o600)
	if _, err := ReadEnvFile(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad line: %v", err)
	}
	// The environment wins over the file.
	procEnv := map[string]string{"GATEWAY_LOG_LEVEL": "warn", "GATEWAY_SIGNING_KEYS": "x", "GATEWAY_HMAC_KEY": "y"}
	e := Env{Lookup: func(k string) string { return procEnv[k] }, File: vars}
	c, err := LoadEnv(e)
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "warn" || c.KeyPrefix != "a$HOME" || c.RedisURL != "redis://h:1" {
		t.Fatalf("loaded %q %q %q", c.LogLevel, c.KeyPrefix, c.RedisURL)
	}
}

// GATEWAY_REDIS_PASSWORD_FILE puts the file's password into REDIS_URL (its user kept); the
// start-up log masks it.
func TestRedisPasswordFile(t *testing.T) {
	t.Parallel()
	pw := filepath.Join(t.TempDir(), "pw")
	_ = os.WriteFile(pw, []byte("p@ss/word\n"), 0o600)
	for in, want := range map[string]string{
		"redis://hashgate@redis:6379":         "redis://hashgate:p%40ss%2Fword@redis:6379",
		"redis://redis:6379/0":                "redis://:p%40ss%2Fword@redis:6379/0",
		"rediss://u:old@a:1,b:2?master_set=m": "rediss://u:p%40ss%2Fword@a:1,b:2?master_set=m",
	} {
		env := map[string]string{"REDIS_URL": in, "GATEWAY_REDIS_PASSWORD_FILE": pw, "GATEWAY_SIGNING_KEYS": "x", "GATEWAY_HMAC_KEY": "y"}
		c, err := Load(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if c.RedisURL != want {
			t.Errorf("%s → %s, want %s", in, c.RedisURL, want)
		}
		for i, f := range c.Fields() {
			if s, ok := f.(string); ok && (strings.Contains(s, "p%40ss") || strings.Contains(s, "p@ss")) {
				t.Errorf("field %d shows the password: %s", i, s)
			}
		}
	}
}

// Unknown GATEWAY_* names come with the nearest known one; known and other names are not listed.
func TestUnknownNames(t *testing.T) {
	t.Parallel()
	got := UnknownNames([]string{"GATEWAY_SESION_IDLE_TIMEOUT", "GATEWAY_ADDR", "HOME", "GATEWAY_ENV_FILE", "GATEWAY_ADMIN_ADR", "GATEWAY_ADMIN_ADR"})
	want := []Unknown{{"GATEWAY_ADMIN_ADR", "GATEWAY_ADMIN_ADDR"}, {"GATEWAY_SESION_IDLE_TIMEOUT", "GATEWAY_SESSION_IDLE_TIMEOUT"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
}
