package main

import (
	"strings"
	"testing"
)

// The ports come from the HASHGATE_* variables (with the script's defaults); bad ones and a
// cluster of fewer than three masters are refused; the export lines name what `make test`
// reads.
func TestLoadAndExportLines(t *testing.T) {
	t.Setenv("HASHGATE_REDIS_CACHE", "/c")
	t.Setenv("HASHGATE_REDIS8_PORT", "6420")
	t.Setenv("HASHGATE_REDIS7_PORT", "")
	t.Setenv("HASHGATE_REDIS_CLUSTER_PORTS", "7300, 7301,7302")
	e, err := load()
	if err != nil {
		t.Fatal(err)
	}
	want := `export HASHGATE_TEST_REDIS8='redis://127.0.0.1:6420'
export HASHGATE_TEST_REDIS_CLUSTER='127.0.0.1:7300,127.0.0.1:7301,127.0.0.1:7302'
export HASHGATE_TEST_REDIS7='redis://127.0.0.1:6391'
export HASHGATE_REDIS8_SERVER='/c/bin/redis8-server'
export HASHGATE_REDIS8_CLI='/c/bin/redis8-cli'
export HASHGATE_REDIS7_SERVER='/c/bin/redis7-server'
export HASHGATE_REDIS7_CLI='/c/bin/redis7-cli'
`
	if got := e.exportLines(); got != want {
		t.Errorf("export lines:\n%s\nwant:\n%s", got, want)
	}
	for name, v := range map[string]string{"HASHGATE_REDIS8_PORT": "0", "HASHGATE_REDIS7_PORT": "55536",
		"HASHGATE_REDIS_CLUSTER_PORTS": "7300,7301", "HASHGATE_REDIS_CACHE": "relative"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, v)
			if _, err := load(); err == nil {
				t.Errorf("%s=%s accepted", name, v)
			}
		})
	}
}

// Each kind of instance gets the configuration the suite relies on: append-only persistence
// for the standalone Redis 8, cluster mode for the cluster nodes, daemons that write their
// pid and log under their own folder.
func TestConf(t *testing.T) {
	e := &env{run: "/c/run", bin: "/c/bin"}
	for _, tt := range []struct {
		in   instance
		want []string
	}{
		{instance{"standalone8", "standalone8", 6420, "8"}, []string{"port 6420\n", "daemonize yes\n", "pidfile /c/run/standalone8/redis.pid\n", "appendonly yes\nappendfsync everysec\n"}},
		{instance{"cluster-7300", "cluster", 7300, "8"}, []string{"port 7300\n", "dir /c/run/cluster-7300\n", "cluster-enabled yes\n", "appendonly no\n"}},
		{instance{"legacy7", "legacy7", 6421, "7.0"}, []string{"port 6421\n", "appendonly no\n", "save \"\"\n"}},
	} {
		conf := e.conf(tt.in)
		for _, w := range tt.want {
			if !strings.Contains(conf, w) {
				t.Errorf("%s: conf lacks %q:\n%s", tt.in.name, w, conf)
			}
		}
	}
	if s8, s7 := e.server(instance{version: "8"}), e.server(instance{version: "7.0"}); s8 != "/c/bin/redis8-server" || s7 != "/c/bin/redis7-server" {
		t.Errorf("servers = %q, %q", s8, s7)
	}
}
