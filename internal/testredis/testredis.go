// Package testredis gives tests a store on every Redis backend the run provides: the embedded
// store always, and standalone Redis 8, a Redis 8 cluster and Redis 7.0 when their variables
// (set by scripts/redis-env.sh and `make test`) are present. A backend whose variable is unset
// is skipped, with the reason in the log.
package testredis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
)

// Environment variables naming the real backends.
const (
	EnvRedis8  = "HASHGATE_TEST_REDIS8"
	EnvCluster = "HASHGATE_TEST_REDIS_CLUSTER"
	EnvRedis7  = "HASHGATE_TEST_REDIS7"
)

// Backend is one place tests can run against.
type Backend struct {
	Name string
	// Env is the variable holding URL ("" for the embedded store).
	Env string
	URL string
	// FieldExpiry forces a field-expiry mode ("" detects).
	FieldExpiry store.FieldExpiry
	// Broadcast: client tracking in broadcast mode by key prefix (the gateway's default,
	// GATEWAY_REDIS_CLIENT_TRACKING=bcast); the other real backends use default tracking, so
	// both modes run every test.
	Broadcast bool
}

// Tracking is the store option of b's tracking mode for a test whose keys start with prefix
// (Each passes it; a test opening another replica of the same keys passes it too).
func (b Backend) Tracking(prefix string) func(*store.Options) {
	return func(o *store.Options) {
		if b.Broadcast {
			o.BroadcastPrefixes = []string{prefix + ":"}
		}
	}
}

// Named is the backend called name (Backends), skipping tb when its server is not configured
// (as outside `make test`).
func Named(tb testing.TB, name string) Backend {
	tb.Helper()
	for _, b := range Backends() {
		if b.Name == name && (b.URL != "" || b.Env == "") {
			return b
		}
	}
	tb.Skipf("no %s backend (run `make test`)", name)
	return Backend{}
}

// Backends lists every backend; URL is empty for a real backend whose variable is unset.
func Backends() []Backend {
	r8 := os.Getenv(EnvRedis8)
	return []Backend{
		{Name: "embedded"},
		{Name: "redis8", Env: EnvRedis8, URL: r8, Broadcast: true},
		// Redis 8 also speaks HSET+HEXPIRE, the Redis 7.4 mode: exercise it there.
		{Name: "redis8-hexpire", Env: EnvRedis8, URL: r8, FieldExpiry: store.FieldExpiryHEXPIRE},
		{Name: "cluster", Env: EnvCluster, URL: os.Getenv(EnvCluster), Broadcast: true},
		{Name: "redis7", Env: EnvRedis7, URL: os.Getenv(EnvRedis7)},
	}
}

// Real reports whether the backend is a real Redis server.
func (b Backend) Real() bool { return b.Env != "" }

// Open opens a store on b for the test, closing it at cleanup; it skips the test when the
// backend's variable is unset.
func Open(t testing.TB, b Backend, opts ...func(*store.Options)) *store.Store {
	t.Helper()
	if b.Real() && b.URL == "" {
		t.Skipf("backend %s: %s is unset (run `make test` to provision real Redis)", b.Name, b.Env)
	}
	o := store.Options{URL: b.URL, Timeout: 2 * time.Second, ForceFieldExpiry: b.FieldExpiry}
	if !b.Real() {
		// The embedded store runs every script in this process (gopher-lua, under -race): a
		// call there only waits for CPU, which a loaded test machine may not give it for 2 s
		// when 64 scripts queue (TestSessionVerifyConcurrentLimit). Timeouts are the real
		// backends' and the fault suites' subject, not the embedded one's.
		o.Timeout = 10 * time.Second
	}
	for _, f := range opts {
		f(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := store.Open(ctx, o)
	if err != nil {
		t.Fatalf("backend %s: open: %v", b.Name, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Each runs fn as a subtest on every backend, in parallel, with a fresh store and a unique key
// prefix so tests never see each other's keys.
func Each(t *testing.T, fn func(t *testing.T, b Backend, s *store.Store, prefix string)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := Prefix(t)
			s := Open(t, b, b.Tracking(prefix))
			fn(t, b, s, prefix)
		})
	}
}

// Prefix returns a unique key prefix for one test.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "t" + hex.EncodeToString(b[:])
}
