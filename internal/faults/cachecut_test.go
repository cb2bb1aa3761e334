package faults

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// The connection to Redis drops while a token's state is being read into the client-side
// cache, with other requests of the same token waiting for that read (what a failover does to
// a gateway whose cache it has just emptied: the floating address moves, connections are reset,
// the hot token is read again by many requests at once). Every request must answer 2xx or a 503
// with Retry-After: the token is valid, and a 401 would make its client drop it
// (docs/ROBUSTNESS.md, finding 6).
func TestValidBearerSurvivesCutDuringCachedRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// down is how long Redis stays paused after the cut.
		down time.Duration
		// ok: every request must be answered 2xx (else a 503 with Retry-After is allowed too).
		ok bool
	}{
		// Redis answers again at once, as the promoted replica does behind the moved address:
		// the requests that waited for the aborted read ask again and succeed.
		{name: "answers again", down: 0, ok: true},
		// Redis stays silent past the gateway's timeout: the answer is unknown, a 503.
		{name: "stays down", down: 2500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cutDuringCachedRead(t, tc.down, tc.ok)
		})
	}
}

func cutDuringCachedRead(t *testing.T, down time.Duration, ok bool) {
	srv := testredis.StartServer(t)
	front := testredis.StartProxy(t, srv.Addr(), 0)
	g := startGateway(t, fmt.Sprintf("redis://127.0.0.1:%d", front.Port), 2*time.Second)
	bearer := g.bearer("t-cachecut", "tokens:read")

	// The token's state is not cached yet (minting does not read it). With Redis paused, the
	// first request starts the cached read and the next ones wait for it.
	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	const waiters = 8
	replies := make([]reply, waiters+1)
	var wg sync.WaitGroup
	send := func(i int) {
		defer wg.Done()
		replies[i] = g.do(http.MethodGet, "/v1/tokens", nil, "Authorization", bearer)
	}
	wg.Add(1)
	go send(0)
	time.Sleep(200 * time.Millisecond)
	wg.Add(waiters)
	for i := 1; i <= waiters; i++ {
		go send(i)
	}
	time.Sleep(200 * time.Millisecond)
	front.Cut()
	time.Sleep(down)
	srv.Resume()
	resumed = true
	wg.Wait()

	for i, r := range replies {
		if r.err == nil && r.status/100 == 2 {
			continue
		}
		if ok {
			t.Errorf("request %d with a valid bearer: want 2xx, got %s", i, r)
		} else if err := r.unavailable(); err != nil {
			t.Errorf("request %d with a valid bearer: %v", i, err)
		}
	}
	if r := g.do(http.MethodGet, "/v1/tokens", nil, "Authorization", bearer); r.status != http.StatusOK {
		t.Errorf("after the cut: %s", r)
	}
}
