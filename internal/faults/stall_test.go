package faults

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Keyed creates while Redis stalls (DEBUG SLEEP 1, every node at once): 32 clients create
// quotes and cases, each with its own Idempotency-Key, and retry every 503 (and every 409
// request-in-flight) with the same key and body until it succeeds, as a careful client does.
// A create that timed out may still run once Redis wakes up, after its claim was released;
// the retry must land on that same object. So: exactly one object per key in Redis, every
// 2xx for one key names the same id, and the stalls did produce retried 503s (else the test
// could not fail). Standalone Redis 8 and a 3-master cluster, each private to the test.
func TestStalledKeyedCreates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (url string, nodes []string)
	}{
		{"standalone", func(t *testing.T) (string, []string) {
			srv := testredis.StartServer(t, "--enable-debug-command", "local")
			return srv.URL(), []string{"127.0.0.1:" + strconv.Itoa(srv.Port)}
		}},
		{"cluster", func(t *testing.T) (string, []string) {
			cl := testredis.StartCluster(t)
			var nodes []string
			for _, n := range cl.Nodes {
				nodes = append(nodes, n.Addr())
			}
			return cl.URL(), nodes
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, nodes := tc.start(t)
			g := startGateway(t, url, 200*time.Millisecond)
			bearer := g.bearer("t-stall", "quotes:write", "cases:write")
			s := &stallScore{ids: map[string]string{}}

			const workers, stalls = 32, 3
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						s.create(g, bearer, w, i)
					}
				}()
			}
			for range stalls {
				done := s.created.Load()
				pollUntil(t, 60*time.Second, "keyed creates before the stall", func() bool { return s.created.Load() >= done+64 })
				stallAll(t, nodes)
			}
			pollUntil(t, 60*time.Second, "keyed creates after the stalls", func() bool { return s.created.Load() >= 64*(stalls+1) })
			close(stop)
			wg.Wait()

			s.mu.Lock()
			defer s.mu.Unlock()
			for _, v := range s.violations {
				t.Error(v)
			}
			objects := countObjects(t, nodes, g.cfg.KeyPrefix)
			t.Logf("%d keyed creates, %d answered 503 and were retried, %d answered 409 in flight; %d objects in Redis",
				len(s.ids), s.retried503, s.retried409, objects)
			if objects != len(s.ids) {
				t.Errorf("%d objects in Redis for %d Idempotency-Keys: %d duplicates", objects, len(s.ids), objects-len(s.ids))
			}
			if s.retried503 < 8 {
				t.Errorf("only %d creates answered 503 during the stalls: the test did not stall the creates", s.retried503)
			}
		})
	}
}

// stallScore records what the clients of TestStalledKeyedCreates saw.
type stallScore struct {
	created atomic.Int64

	mu                     sync.Mutex
	ids                    map[string]string // Idempotency-Key → the id its 2xx named
	retried503, retried409 int
	violations             []string
}

// create sends one keyed create (quote or case by the parity of w+i) and retries it with the
// same key and body until it is answered 201.
func (s *stallScore) create(g *gateway, bearer string, w, i int) {
	key := fmt.Sprintf("stall-%d-%d", w, i)
	path, body, field := "/v1/quotes", any(map[string]any{"customerId": "c-" + key, "currency": "EUR", "salesChannel": "stall"}), "quoteId"
	if (w+i)%2 == 1 {
		path, field = "/v1/cases", "caseId"
		body = map[string]any{"subjectRef": "s-" + key, "assignedTeam": "stall", "reason": "stall test",
			"dueAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	}
	deadline := time.Now().Add(hangGuard + 40*time.Second)
	for time.Now().Before(deadline) {
		r := g.do("POST", path, body, "Authorization", bearer, "Idempotency-Key", key)
		switch {
		case r.err == nil && r.status == http.StatusCreated:
			var v map[string]any
			if err := r.decode(&v); err != nil {
				s.violate("%s: %v", key, err)
				return
			}
			id, _ := v[field].(string)
			s.mu.Lock()
			if prev, ok := s.ids[key]; ok && prev != id {
				s.violations = append(s.violations, fmt.Sprintf("%s answered %s, then %s", key, prev, id))
			}
			s.ids[key] = id
			s.mu.Unlock()
			s.created.Add(1)
			return
		case r.err == nil && r.status == http.StatusConflict && strings.Contains(string(r.body), "request-in-flight"):
			s.mu.Lock()
			s.retried409++
			s.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		case r.unavailable() == nil:
			s.mu.Lock()
			s.retried503++
			s.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		default:
			s.violate("%s: %s", key, r)
			return
		}
	}
	s.violate("%s: not created within the deadline", key)
}

func (s *stallScore) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) < maxViolations {
		s.violations = append(s.violations, fmt.Sprintf(format, args...))
	}
}

// stallAll runs DEBUG SLEEP 1 on every node at once and waits until each answers again.
func stallAll(t *testing.T, nodes []string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, addr := range nodes {
		c := testredis.NodeClient(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.Do(ctx, c.B().Arbitrary("DEBUG", "SLEEP", "1").Build()).Error(); err != nil {
				t.Errorf("DEBUG SLEEP on %s: %v", addr, err)
			}
		}()
	}
	wg.Wait()
}

// countObjects counts the quote and case hashes under prefix on every node.
func countObjects(t *testing.T, nodes []string, prefix string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	for _, addr := range nodes {
		c := testredis.NodeClient(t, addr)
		for _, typ := range []string{"quote", "case"} {
			var cursor uint64
			for {
				e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+":v1:"+typ+":*").Count(1000).Type("hash").Build()).AsScanEntry()
				if err != nil {
					t.Fatalf("scan %s: %v", addr, err)
				}
				for _, k := range e.Elements {
					if !strings.HasSuffix(k, ":items") {
						n++
					}
				}
				if cursor = e.Cursor; cursor == 0 {
					break
				}
			}
		}
	}
	return n
}
