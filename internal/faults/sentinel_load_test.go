package faults

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// A Sentinel failover under load (issue 11): 64 clients create a session, authorize with it and
// revoke it, in a loop, while the primary is killed (SIGKILL) and Sentinel promotes the replica.
// During the switch the only refusal is 503 with Retry-After — never another 5xx, never a
// transport error — and the same gateway (no restart) then serves from the new primary (its
// revocations there answer 503: the promoted primary has no replica, and auto keeps requiring
// the one it has seen). The longest run of consecutive 503s is logged (a figure, not an assertion).
func TestSentinelFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	set := testredis.StartSentinel(t, testredis.SentinelOptions{})
	g := startGateway(t, set.URL(), 500*time.Millisecond)
	bearer := g.bearer("t-sentinel-load", "sessions:read", "sessions:write")

	type answer struct {
		at     time.Time
		status int
	}
	var (
		mu      sync.Mutex
		answers []answer
		stop    atomic.Bool
		wg      sync.WaitGroup
		afterOK atomic.Int64
		failed  atomic.Bool
	)
	note := func(what string, r reply) {
		mu.Lock()
		answers = append(answers, answer{at: r.start.Add(r.took), status: r.status})
		mu.Unlock()
		switch {
		case r.err != nil || r.status >= 500 && r.status != http.StatusServiceUnavailable:
			failed.Store(true)
			t.Errorf("%s: %s", what, r)
		case r.status == http.StatusServiceUnavailable:
			if err := r.unavailable(); err != nil {
				failed.Store(true)
				t.Errorf("%s: %v", what, err)
			}
		case failed.Load():
		case set.Primary != nil && g.store.Primary() == set.Replica.Addr() && r.status < 300:
			afterOK.Add(1)
		}
	}
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s, r, err := g.createSession(bearer, "u-"+string(rune('a'+i%26)))
				if err != nil {
					note("create", r)
					continue
				}
				note("create", r)
				note("authorize", g.do("GET", "/v1/authorize", nil, "X-Session-Token", s.Token))
				note("revoke", g.do("DELETE", "/v1/sessions/"+s.ID, nil, "Authorization", bearer))
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	killedAt := time.Now()
	set.Primary.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := set.WaitMaster(ctx, set.Replica.Addr()); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 30*time.Second, "the gateway serving from the promoted replica", func() bool {
		return afterOK.Load() >= 200 || failed.Load()
	})
	stop.Store(true)
	wg.Wait()

	// The longest run of consecutive 503s, in the order the answers arrived.
	sort.Slice(answers, func(i, j int) bool { return answers[i].at.Before(answers[j].at) })
	var run, longest int
	var runStart, longestStart, longestEnd time.Time
	for _, a := range answers {
		if a.status != http.StatusServiceUnavailable {
			run = 0
			continue
		}
		if run == 0 {
			runStart = a.at
		}
		run++
		if run > longest {
			longest, longestStart, longestEnd = run, runStart, a.at
		}
	}
	t.Logf("sentinel failover under load: %d answers; longest run of 503s: %d answers over %v (from %v after the kill); primary now %s",
		len(answers), longest, longestEnd.Sub(longestStart).Round(time.Millisecond),
		longestStart.Sub(killedAt).Round(time.Millisecond), g.store.Primary())
}
