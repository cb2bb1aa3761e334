package ratesync

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The limiter's Redis traffic is its background flush alone: nothing while no request comes,
// and at most one round trip per flush interval however many requests it admits (far from the
// limit, as in the benchmark's quote-get row).
func TestFlushRoundTrips(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	rec := testredis.NewCounter(s.Client)
	cp := *s
	cp.Client = rec
	h, _, _ := keyhash.Generate()
	const every = 20 * time.Millisecond
	l := newLimiter(t, &cp, testredis.Prefix(t), h, Options{FlushInterval: every})
	run(t, l)
	tok := &ratelimit.Policy{Name: "token", Limit: 1_000_000_000, Window: time.Minute}
	ten := &ratelimit.Policy{Name: "tenant", Limit: 1_000_000_000, Window: time.Minute}
	reqs := []ratelimit.Request{{Policy: tok, ID: "tok-1"}, {Policy: ten, ID: "acme"}}

	time.Sleep(10 * every)
	if n := rec.Trips(); n != 0 {
		t.Fatalf("%d round trips with no request: a flush with nothing to send called Redis", n)
	}
	start := time.Now()
	const requests = 20_000
	for i := range requests {
		if _, ok := l.Take(context.Background(), reqs...); !ok {
			t.Fatalf("request %d refused", i)
		}
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // spread over several intervals, as traffic is
		}
	}
	elapsed := time.Since(start)
	time.Sleep(3 * every) // the last admissions' flush
	busy := rec.Trips()
	if most := int64(elapsed/every) + 3; busy > most {
		t.Errorf("%d round trips for %d requests over %v: more than one a flush interval (%d)", busy, requests, elapsed.Round(time.Millisecond), most)
	}
	time.Sleep(10 * every)
	if idle := rec.Trips() - busy; idle != 0 {
		t.Errorf("%d round trips once the requests stopped", idle)
	}
	t.Logf("%d round trips for %d requests over %v (%d intervals)", busy, requests, elapsed.Round(time.Millisecond), elapsed/every)
}

// decisionsMeter records what reaches the hashgate_ratelimit_decisions counter: how many Add
// calls, and the total by outcome.
type decisionsMeter struct {
	noop.Meter
	mu    sync.Mutex
	calls int
	total map[string]int64
}

func (m *decisionsMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	if name != "hashgate_ratelimit_decisions" {
		return noop.Int64Counter{}, nil
	}
	return decisionsAdd{m: m}, nil
}

type decisionsAdd struct {
	noop.Int64Counter
	m *decisionsMeter
}

func (d decisionsAdd) Add(_ context.Context, n int64, opts ...metric.AddOption) {
	attrs := metric.NewAddConfig(opts).Attributes()
	outcome, _ := attrs.Value(attribute.Key("outcome"))
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	d.m.calls++
	d.m.total[outcome.AsString()] += n
}

func (m *decisionsMeter) read() (int, map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	for k, v := range m.total {
		out[k] = v
	}
	return m.calls, out
}

// A decision is counted in the counter Take already holds locked; the flush adds each counter's
// decisions to hashgate_ratelimit_decisions, so the metric costs a request nothing but an
// increment, and its totals stay exact.
func TestDecisionsCountedByTheFlush(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h, _, _ := keyhash.Generate()
	m := &decisionsMeter{total: map[string]int64{}}
	l := newLimiter(t, s, testredis.Prefix(t), h, Options{FlushInterval: time.Hour, Meter: m})
	p := &ratelimit.Policy{Name: "token", Limit: 100, Window: time.Hour}
	for range 300 {
		l.Take(context.Background(), ratelimit.Request{Policy: p, ID: "tok-1"})
	}
	if calls, _ := m.read(); calls != 0 {
		t.Fatalf("%d metric calls on the request path for 300 requests, want none", calls)
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls, total := m.read()
	if calls != 2 || total["allowed"] != 100 || total["limited"] != 200 {
		t.Fatalf("after the flush: %d calls, totals %v; want 2 calls, 100 allowed and 200 limited", calls, total)
	}
	// Nothing new, nothing added again.
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again, _ := m.read(); again != calls {
		t.Fatalf("an idle flush added to the metric (%d calls, was %d)", again, calls)
	}
}
