package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || !c.Embedded() || c.RedisTimeout != 500*time.Millisecond || c.RedisStartTimeout != 30*time.Second || c.MFAMaxAttempts != 5 ||
		c.SessionRefreshFraction != 0.25 || !c.RedisClientCache || c.QuoteMaxItems != 100 || c.SessionLimitPolicy != "evict-oldest" ||
		c.SessionEvents != "ends" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad duration", map[string]string{"GATEWAY_REDIS_TIMEOUT": "soon"}, "GATEWAY_REDIS_TIMEOUT"},
		{"negative start timeout", map[string]string{"GATEWAY_REDIS_START_TIMEOUT": "-1s"}, "GATEWAY_REDIS_START_TIMEOUT"},
		{"start timeout over an hour", map[string]string{"GATEWAY_REDIS_START_TIMEOUT": "2h"}, "GATEWAY_REDIS_START_TIMEOUT"},
		{"redis needs keys", map[string]string{"REDIS_URL": "redis://127.0.0.1:6379"}, "GATEWAY_SIGNING_KEYS is required"},
		{"fraction range", map[string]string{"GATEWAY_SESSION_REFRESH_FRACTION": "1.5"}, "REFRESH_FRACTION"},
		{"log level", map[string]string{"GATEWAY_LOG_LEVEL": "loud"}, "GATEWAY_LOG_LEVEL"},
		{"session limit policy", map[string]string{"GATEWAY_SESSION_LIMIT_POLICY": "evict-newest"}, "GATEWAY_SESSION_LIMIT_POLICY"},
		{"session events as a boolean", map[string]string{"GATEWAY_SESSION_EVENTS": "true"}, "GATEWAY_SESSION_EVENTS must be all, ends or off"},
		{"prefix with tag", map[string]string{"GATEWAY_KEY_PREFIX": "a{b}"}, "GATEWAY_KEY_PREFIX"},
		{"absolute below idle", map[string]string{"GATEWAY_SESSION_IDLE_TIMEOUT": "2h", "GATEWAY_SESSION_ABSOLUTE_TIMEOUT": "1h"}, "ABSOLUTE_TIMEOUT"},
		{"public URL without scheme", map[string]string{"GATEWAY_PUBLIC_URL": "api.example.com/hashgate"}, "GATEWAY_PUBLIC_URL"},
		{"public URL with a query", map[string]string{"GATEWAY_PUBLIC_URL": "https://api.example.com/?x=1"}, "GATEWAY_PUBLIC_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"GATEWAY_PUBLIC_URL": "https://api.example.com/hashgate"}))
	if err != nil || c.PublicURL != "https://api.example.com/hashgate" {
		t.Fatalf("PublicURL %q, %v", c.PublicURL, err)
	}
}

func TestSecretsMasked(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{
		"REDIS_URL":            "redis://app:hunter2pw@10.1.1.1:6379/0",
		"GATEWAY_SIGNING_KEYS": "c2VjcmV0c2VlZHNlY3JldHNlZWRzZWNyZXRzZWVkMTI=",
		"GATEWAY_HMAC_KEY":     "aG1hY2htYWNobWFjaG1hY2htYWNobWFjaG1hY2htYWM=",
	}))
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprint(c.Fields()...)
	for _, secret := range []string{"hunter2pw", "c2VjcmV0", "aG1hY2ht"} {
		if strings.Contains(out, secret) {
			t.Fatalf("logged config leaks %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, "redis://app:***@10.1.1.1:6379/0") {
		t.Fatalf("masked url missing: %s", out)
	}
}

// The README's configuration table must name every variable the gateway reads.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ty := reflect.TypeOf(Config{})
	for i := 0; i < ty.NumField(); i++ {
		name := ty.Field(i).Tag.Get("env")
		if !strings.Contains(string(readme), "| `"+name+"` |") {
			t.Errorf("README.md does not document %s", name)
		}
	}
}

// A Sentinel URL carries the Sentinels' password as a query parameter: masked like the data
// nodes' password.
func TestSentinelPasswordMasked(t *testing.T) {
	t.Parallel()
	got := MaskURL("rediss://app:hunter2pw@s1:26379,s2:26379/0?master_set=main&sentinel_username=sen&sentinel_password=s3ntinelpw")
	if strings.Contains(got, "hunter2pw") || strings.Contains(got, "s3ntinelpw") {
		t.Fatalf("masked URL leaks a password: %s", got)
	}
	if !strings.Contains(got, "master_set=main") || !strings.Contains(got, "sentinel_password=***") {
		t.Fatalf("masked URL lost its shape: %s", got)
	}
}

func TestDurableSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Durability(); d.Replicas != -1 || d.Timeout != 2*time.Second || d.CredentialsOnly || d.UnconfirmedReads {
		t.Fatalf("defaults: %+v, want auto (-1), 2s, every write and every read confirmed", d)
	}
	if c, err := Load(env(map[string]string{"GATEWAY_DURABLE_READS": "off"})); err != nil || !c.Durability().UnconfirmedReads {
		t.Errorf("GATEWAY_DURABLE_READS=off: %+v, %v", c.Durability(), err)
	}
	if c, err := Load(env(map[string]string{"GATEWAY_DURABLE_WRITES": "credentials"})); err != nil || !c.Durability().CredentialsOnly {
		t.Errorf("GATEWAY_DURABLE_WRITES=credentials: %+v, %v", c.Durability(), err)
	}
	for v, want := range map[string]int{"auto": -1, "0": 0, "2": 2} {
		c, err := Load(env(map[string]string{"GATEWAY_DURABLE_REPLICAS": v, "GATEWAY_DURABLE_TIMEOUT": "250ms"}))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if d := c.Durability(); d.Replicas != want || d.Timeout != 250*time.Millisecond {
			t.Errorf("%s: %+v", v, d)
		}
	}
	for _, bad := range []map[string]string{{"GATEWAY_DURABLE_REPLICAS": "some"}, {"GATEWAY_DURABLE_REPLICAS": "-1"},
		{"GATEWAY_DURABLE_REPLICAS": "100"}, {"GATEWAY_DURABLE_TIMEOUT": "0s"}, {"GATEWAY_DURABLE_WRITES": "some"}, {"GATEWAY_DURABLE_READS": "some"}} {
		if _, err := Load(env(bad)); err == nil || !strings.Contains(err.Error(), "GATEWAY_DURABLE_") {
			t.Errorf("%v: err %v", bad, err)
		}
	}
}
