package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A gateway with small configured caches authorizes many times more distinct sessions than
// they hold, and its Go heap grows by no more than the bound those settings imply: every
// in-process cache on the hot path (rueidis' client-side cache, the decoded-session memo, the
// read-your-writes marks) is bounded. Not parallel: the heap is the process's, so no other test
// may allocate while it is measured.
func TestBoundedMemoryAuthorizingManySessions(t *testing.T) {
	b := testredis.Backends()[1] // redis8: client-side caching needs a real server
	cfg := defaults(t)
	cfg.RedisURL = b.URL
	if cfg.RedisURL == "" {
		t.Skipf("%s is unset (run `make test` to provision real Redis)", b.Env)
	}
	cfg.SessionCacheTTL = time.Minute // nothing leaves a cache by age while the test runs
	cfg.RedisClientCacheBytes = 256 << 10
	cfg.SessionCacheEntries = 1000
	const n = 20000 // distinct sessions: far more than the caches above hold

	a, h, err := app.FreshKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, s := gatewayWith(t, cfg, a, h)
	tokens := createSessions(t, g, n)

	// What the settings imply: rueidis' cache on each connection (at most 4 per node: 2^2,
	// rueidis' own cap), counted twice for what its size estimate leaves out; 2 KiB per memo
	// entry; 8 MiB for everything else a busy gateway keeps (pools, buffers).
	bound := uint64(2*4*cfg.RedisClientCacheBytes) + uint64(cfg.SessionCacheEntries)*2048 + 8<<20
	before := heap()
	for i, tok := range tokens {
		req := httptest.NewRequest(http.MethodGet, "/v1/authorize", nil)
		req.Header.Set("X-Session-Token", tok)
		rec := httptest.NewRecorder()
		g.Echo.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("authorize %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	after := heap()
	grew := int64(after) - int64(before)
	t.Logf("heap %d → %d bytes after authorizing %d sessions: grew %.1f MiB (bound %.1f MiB); cache hits/misses %s",
		before, after, n, float64(grew)/(1<<20), float64(bound)/(1<<20), cacheStats(g))
	if grew > int64(bound) {
		t.Fatalf("the heap grew by %.1f MiB authorizing %d distinct sessions, over the %.1f MiB the cache settings imply",
			float64(grew)/(1<<20), n, float64(bound)/(1<<20))
	}
	runtime.KeepAlive(s)
}

// heap is the live Go heap after a full collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func cacheStats(g *app.Gateway) string {
	return fmt.Sprint(g.Sessions.CacheStats())
}

// gatewayWith opens the store cfg names, with the scripts loaded, and builds the gateway
// with keys a and h.
func gatewayWith(t *testing.T, cfg config.Config, a *auth.Authority, h *keyhash.Hasher) (*app.Gateway, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := store.Open(ctx, app.StoreOptions(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		t.Fatal(err)
	}
	g, err := app.New(cfg, s, app.Options{Auth: a, Hasher: h})
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

// createSessions creates n sessions, one user each, and returns their tokens.
func createSessions(t *testing.T, g *app.Gateway, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				is, err := g.Sessions.Create(context.Background(), "acme", sessions.CreateInput{UserID: fmt.Sprintf("user-%d", i), AuthLevel: "BASIC"})
				if err != nil {
					errs <- err
					return
				}
				tokens[i] = is.Token
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return tokens
}
