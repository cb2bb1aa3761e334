package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

func TestOpenDetectsCapabilities(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, b)
			ctx := context.Background()
			if _, err := s.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
			want := map[string]store.FieldExpiry{
				"embedded": store.FieldExpiryHSETEX, "redis8": store.FieldExpiryHSETEX,
				"redis8-hexpire": store.FieldExpiryHEXPIRE, "cluster": store.FieldExpiryHSETEX,
				"redis7": store.FieldExpiryFallback,
			}[b.Name]
			if s.Caps.FieldExpiry != want {
				t.Errorf("field expiry = %q, want %q", s.Caps.FieldExpiry, want)
			}
			wantTopo := store.Standalone
			if b.Name == "cluster" {
				wantTopo = store.Cluster
			}
			if s.Caps.Topology != wantTopo {
				t.Errorf("topology = %q, want %q", s.Caps.Topology, wantTopo)
			}
			if s.Caps.Embedded != (b.Name == "embedded") || s.Caps.ServerVersion == "" {
				t.Errorf("caps = %+v", s.Caps)
			}
			if b.Name == "redis7" && !strings.HasPrefix(s.Caps.ServerVersion, "7.0") {
				t.Errorf("redis7 backend runs %s", s.Caps.ServerVersion)
			}
			if err := s.LoadScripts(ctx, "return 1"); err != nil {
				t.Fatalf("load scripts: %v", err)
			}
		})
	}
}

func TestUnreachableRedisFailsFastAsUnavailable(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := store.Open(context.Background(), store.Options{URL: "redis://127.0.0.1:1", Timeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("open succeeded against a closed port")
	}
	if !errors.Is(err, storeerr.ErrUnavailable) {
		t.Fatalf("err = %v, want storeerr.ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("open took %v", d)
	}
}

func TestClientOption(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		addrs []string
		bad   bool
	}{
		{in: "redis://127.0.0.1:6379", addrs: []string{"127.0.0.1:6379"}},
		{in: "127.0.0.1:7000,127.0.0.1:7001", addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}},
		{in: "redis://u:secretpw@10.0.0.1:7000,10.0.0.2:7001/0", addrs: []string{"10.0.0.1:7000", "10.0.0.2:7001"}},
		{in: "localhost", bad: true},
		{in: "redis://u:secretpw@[::1", bad: true},
	}
	for _, tt := range tests {
		opt, err := store.ClientOption(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: no error", tt.in)
			} else if strings.Contains(err.Error(), "secretpw") {
				t.Errorf("%q: error leaks the password: %v", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if strings.Join(opt.InitAddress, ",") != strings.Join(tt.addrs, ",") {
			t.Errorf("%q: addrs = %v, want %v", tt.in, opt.InitAddress, tt.addrs)
		}
	}
}

// The capability probe leaves no key behind (a key without a key-level TTL would break the
// every-key-has-a-TTL rule).
func TestProbeLeavesNoKey(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, _ *store.Store, prefix string) {
		s := testredis.Open(t, b, func(o *store.Options) { o.ProbePrefix = prefix; o.ForceFieldExpiry = "" })
		n, err := s.Client.Do(context.Background(), s.Client.B().Exists().Key(prefix+":v1:probe:{probe}").Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("probe key exists: %d %v", n, err)
		}
	})
}
