package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func TestHeaders(t *testing.T) {
	t.Parallel()
	p := Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}
	tests := []struct {
		name       string
		d          Decision
		wantPolicy string
		wantLimit  string
	}{
		{"fresh", Decision{Policy: p, Allowed: true, Count: 1, Reset: 41500 * time.Millisecond}, `"mfa";q=5;w=600`, `"mfa";r=4;t=42`},
		{"exhausted", Decision{Policy: p, Allowed: false, Count: 5, Reset: time.Second}, `"mfa";q=5;w=600`, `"mfa";r=0;t=1`},
		{"quoted name", Decision{Policy: Policy{Name: `a"b`, Limit: 1, Window: 1500 * time.Millisecond}, Count: 0}, `"a\"b";q=1;w=2`, `"a\"b";r=1;t=0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.d.Headers()
			if h["RateLimit-Policy"] != tt.wantPolicy || h["RateLimit"] != tt.wantLimit {
				t.Fatalf("headers = %v, want %q / %q", h, tt.wantPolicy, tt.wantLimit)
			}
		})
	}
}

func TestDecisionErr(t *testing.T) {
	t.Parallel()
	p := Policy{Name: "mfa", Limit: 5, Window: time.Minute}
	if err := (Decision{Policy: p, Allowed: true, Count: 2}).Err(); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	err := Decision{Policy: p, Count: 5, Reset: 1200 * time.Millisecond}.Err()
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.RateLimited || e.RetryAfter != 1200*time.Millisecond {
		t.Fatalf("err = %#v", err)
	}
	if e.Headers["RateLimit"] != `"mfa";r=0;t=2` || e.Extra["attemptsLeft"] != 0 {
		t.Fatalf("headers %v extra %v", e.Headers, e.Extra)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    Policy
		ok   bool
	}{
		{"good", Policy{Name: "mfa", Limit: 5, Window: time.Minute}, true},
		{"colon in name", Policy{Name: "a:b", Limit: 5, Window: time.Minute}, false},
		{"brace in name", Policy{Name: "a{b", Limit: 5, Window: time.Minute}, false},
		{"zero limit", Policy{Name: "mfa", Limit: 0, Window: time.Minute}, false},
		{"tiny window", Policy{Name: "mfa", Limit: 1, Window: time.Millisecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.p.Validate(); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadPolicy)) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func newTestLimiter(t *testing.T, s *store.Store, prefix string, p Policy) *Limiter {
	t.Helper()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLimiter(s, prefix, h, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewLimiterRefusesBadOptions(t *testing.T) {
	t.Parallel()
	h, _, _ := keyhash.Generate()
	s := &store.Store{}
	if _, err := NewLimiter(s, "hg", h, Policy{Name: "x", Limit: 1, Window: time.Second}, nil); !errors.Is(err, ErrBadLimiter) {
		t.Fatalf("nil client: %v", err)
	}
}

// Concurrent attempts: exactly the limit is allowed, the counter key carries a TTL of at
// most window + buffer, and the identifier never appears in the key.
func TestLimiterConcurrentExactLimit(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		p := Policy{Name: "login", Limit: 7, Window: time.Hour}
		l := newTestLimiter(t, s, prefix, p)
		ctx := context.Background()
		const n = 64
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			allowed int
		)
		for range n {
			wg.Go(func() {
				d, err := l.Allow(ctx, "alice@example.com")
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					allowed++
					mu.Unlock()
				} else if d.Remaining() != 0 || d.Err() == nil {
					t.Errorf("refused decision %+v", d)
				}
			})
		}
		wg.Wait()
		if allowed != p.Limit {
			t.Fatalf("allowed %d of %d, want exactly %d", allowed, n, p.Limit)
		}
		other, err := l.Allow(ctx, "bob@example.com")
		if err != nil || !other.Allowed || other.Count != 1 {
			t.Fatalf("another identifier: %+v %v", other, err)
		}
		keys := scanKeys(t, s, prefix)
		if len(keys) != 2 {
			t.Fatalf("keys = %v", keys)
		}
		for _, k := range keys {
			if strings.Contains(k, "alice") || strings.Contains(k, "bob") {
				t.Fatalf("raw identifier in key %q", k)
			}
			pttl, err := s.Client.Do(ctx, s.Client.B().Pttl().Key(k).Build()).AsInt64()
			if err != nil || pttl <= 0 || pttl > (p.Window+p.Buffer()).Milliseconds() {
				t.Fatalf("pttl(%s) = %d, %v", k, pttl, err)
			}
		}
	})
}

// The window comes from the server's clock: once it ends, attempts are allowed again.
func TestLimiterWindowEnds(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		p := Policy{Name: "otp", Limit: 2, Window: time.Second}
		l := newTestLimiter(t, s, prefix, p)
		ctx := context.Background()
		// Count until refused (the window may roll meanwhile; then counting restarts at 1).
		var last Decision
		for i := 0; ; i++ {
			d, err := l.Allow(ctx, "u1")
			if err != nil {
				t.Fatal(err)
			}
			if d.Count > p.Limit || i > 10 {
				t.Fatalf("decision %d: %+v", i, d)
			}
			if !d.Allowed {
				last = d
				break
			}
		}
		if last.Count != p.Limit || last.Reset <= 0 || last.Reset > p.Window {
			t.Fatalf("refusal = %+v", last)
		}
		time.Sleep(last.Reset + 50*time.Millisecond)
		d, err := l.Allow(ctx, "u1")
		if err != nil || !d.Allowed || d.Count != 1 {
			t.Fatalf("after the window: %+v %v", d, err)
		}
	})
}

// scanKeys lists every key under prefix on every node.
func scanKeys(t *testing.T, s *store.Store, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, n := range s.Client.Nodes() {
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(prefix+":*").Count(500).Build()).AsScanEntry()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e.Elements...)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return out
}
