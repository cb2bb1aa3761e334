package accessrules

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestReloadKeepsLastGoodSet: a change of the file is picked up by the poll; an invalid new
// file is logged and counted, and the last good set stays in force.
func TestReloadKeepsLastGoodSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("default: deny\n")
	var logs syncBuffer
	reader := sdkmetric.NewManualReader()
	h, err := Open(path, slog.New(slog.NewTextHandler(&logs, nil)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Watch(ctx, 10*time.Millisecond)
	decide := func() string { return h.Current().Decide(Request{Method: "GET", URI: "/x"}).Policy.String() }
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); decide() != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("decision %s, want %s", decide(), want)
			}
		}
	}
	waitFor("deny")
	write("default: allow\nrules: []\n")
	waitFor("allow")
	write("default: allow\nrules:\n  - paths: [\"nope\"]\n    policy: deny\n# longer, so the size changes\n")
	// The watcher may also meet the file half written (empty, refused): wait for the whole
	// invalid file's refusal, which names its line 3.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "line 3"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the invalid file was never reloaded")
		}
	}
	if decide() != "allow" || !strings.Contains(logs.String(), "reload refused") {
		t.Fatalf("after an invalid file: %s; log %s", decide(), logs.String())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "hashgate_access_rules_reload" {
				for _, dp := range sum.DataPoints {
					v, _ := dp.Attributes.Value("result")
					got[v.AsString()] += dp.Value
				}
			}
		}
	}
	if got["ok"] < 1 || got["invalid"] < 1 {
		t.Fatalf("reload counts %v", got)
	}
}

// syncBuffer is a log sink the test reads while the watcher writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReloadOnSIGHUP: with the poll far off, SIGHUP alone loads the changed file.
func TestReloadOnSIGHUP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte("default: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := Open(path, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The test's own registration keeps a SIGHUP sent before Watch registers from ending the process.
	guard := make(chan os.Signal, 8)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Watch(ctx, time.Hour)
	if err := os.WriteFile(path, []byte("default: allow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); h.Current().Default.Policy != Allow; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the file")
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGHUP)
	}
}
