package robustness

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Rate limits: a tenant of its own (limitedTenant) calls through replicas of their own, built
// with the per-tenant request-rate limit on (rateLimit per second; the main workload's
// replicas run with the limits off) over the same deployment, so every fault reaches the
// limiter too. The limiter (internal/ratelimit/ratesync) decides from memory and syncs the
// counts through Redis; windows are fixed, aligned on the server's clock (here the test's).
//
// The property: in every window, the requests admitted (any answer but 429) across all the
// replicas stay within limit × (1 + ε). ε is what the limiter's design allows (ratesync.Limiter):
//   - while Redis answers, a replica overshoots by what the others admitted and had not yet
//     sent: at most (n − 1) × (SyncShare × limit + what one replica admits during a flush's
//     round trip) — with n = 2, SyncShare = 0.02 and a few admissions per round trip,
//     quietEpsilon = 0.1;
//   - in a window a fault touches (Redis unreachable, stalled, or a failover to a replica
//     that lacks the latest counts) each replica enforces the limit on its own admissions and
//     on the totals Redis last answered, which a failover can roll back: up to n × limit plus
//     what was admitted before the counts were lost, faultEpsilon = n.

const (
	limitedTenant = "t-limited"
	rateLimit     = 100 // per second, per tenant
	quietEpsilon  = 0.1
	// limitedClients per limited replica; each pauses limitedPace between requests, so the
	// offered rate is several times the limit without taking the machine.
	limitedClients = 2
	limitedPace    = 8 * time.Millisecond
)

// limitedOp is one request of the limited tenant: call and return, admitted or not, or never
// answered (a transport failure, which the checker counts as possibly admitted).
type limitedOp struct {
	call, ret         time.Time
	admitted, unknown bool
}

type limiterRun struct {
	gws     []*gateway
	bearers []string // each replica's bearer for limitedTenant
	mu      sync.Mutex
	ops     []limitedOp
}

// startLimited builds the limited tenant's replicas over url.
func startLimited(t *testing.T, url, durable string, n int) *limiterRun {
	t.Helper()
	spec := gatewayConfig(t, url, durable).with("GATEWAY_RATE_LIMIT_PER_TENANT", fmt.Sprintf("%d/1s", rateLimit))
	l := &limiterRun{gws: startGateways(t, slices.Repeat([]gatewaySpec{spec}, n)...)}
	bearer := l.gws[0].bearer(t, limitedTenant, "quotes:read")
	for range l.gws {
		l.bearers = append(l.bearers, bearer)
	}
	return l
}

// run sends requests from every client until ctx ends: reads of a quote id no draft has (404,
// one Redis read; admitted like any other answer but 429).
func (l *limiterRun) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, g := range l.gws {
		for range limitedClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					call := time.Now()
					r := g.do("GET", "/v1/quotes/q_0000000000000000000000000z", nil, "Authorization", l.bearers[i])
					op := limitedOp{call: call, ret: time.Now(), unknown: r.status == 0,
						admitted: r.status != 0 && r.status != http.StatusTooManyRequests}
					l.mu.Lock()
					l.ops = append(l.ops, op)
					l.mu.Unlock()
					time.Sleep(limitedPace)
				}
			}()
		}
	}
	wg.Wait()
}

// check counts, per whole one-second window, the requests certainly admitted in it (call and
// return inside it) and compares them with the bound: quietEpsilon, or faultEpsilon in a
// window within a second of a fault's span. Objects are windows; violations, windows over
// their bound; the notes give the largest ratio of each kind, and how many windows a fault
// excused: disturbed, over the quiet bound, within the fault's.
func (l *limiterRun) check(r result, spans [][2]time.Time) result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Model, r.Ops = "ratelimits", len(l.ops)
	if len(l.ops) == 0 {
		return r
	}
	certain := map[int64]int{}
	first, last := l.ops[0].call.UnixMilli()/1000, l.ops[0].ret.UnixMilli()/1000
	for _, op := range l.ops {
		if op.unknown {
			r.Unknown++
		}
		w := op.call.UnixMilli() / 1000
		first, last = min(first, w), max(last, op.ret.UnixMilli()/1000)
		if op.admitted && w == op.ret.UnixMilli()/1000 {
			certain[w]++
		}
	}
	faultEpsilon := float64(len(l.gws))
	var quietMax, faultMax float64
	var disturbedN, excused int
	for w := first + 1; w < last; w++ { // the whole windows only
		from, to := time.UnixMilli(w*1000), time.UnixMilli((w+1)*1000)
		disturbed := false
		for _, s := range spans {
			disturbed = disturbed || from.Before(s[1].Add(time.Second)) && to.After(s[0].Add(-time.Second))
		}
		ratio := float64(certain[w]) / rateLimit
		eps := quietEpsilon
		if disturbed {
			eps, faultMax = faultEpsilon, max(faultMax, ratio)
			disturbedN++
			if ratio > 1+quietEpsilon && ratio <= 1+eps {
				excused++
			}
		} else {
			quietMax = max(quietMax, ratio)
		}
		r.Objects++
		if ratio > 1+eps {
			r.Violations++
			r.Notes = append(r.Notes, fmt.Sprintf("window %s: %d admitted (limit %d, ε %.2f, disturbed %v)",
				from.UTC().Format(time.RFC3339), certain[w], rateLimit, eps, disturbed))
		}
	}
	r.Notes = append(r.Notes, fmt.Sprintf("largest admitted/limit: %.2f in quiet windows, %.2f in windows a fault touched", quietMax, faultMax),
		fmt.Sprintf("%d of %d windows disturbed (within 1 s of one of %d fault spans), %d of them over the quiet bound %.2f and held to %.2f only",
			disturbedN, r.Objects, len(spans), excused, 1+quietEpsilon, 1+faultEpsilon))
	return r
}

// rateControl is the control of the rate-limits check: the limited tenant alone, with no
// fault, on replicas configured with different GATEWAY_KEY_PREFIXes over one Redis (an operator's
// mistake the limiter cannot detect): their counters never meet, so each admits up to the
// limit on its own and together they admit about n × limit per window. The checker must find
// windows over limit × (1 + quietEpsilon), or it could not see an overshoot. Two settings
// tried first are not unsafe: GATEWAY_RATE_LIMIT_SYNC_SHARE=1 with a 10s flush (near the limit
// every admission is sent at once; 1.02 × limit at most), and Redis made unreachable (each
// request then waits for the Redis timeout, so the clients cannot offer more than the limit).
func rateControl(t *testing.T, run time.Duration) result {
	srv := testredis.StartServer(t, redisArgs...)
	l := &limiterRun{}
	for range *flagGateways {
		// A prefix of its own.
		g := startGateways(t, gatewayConfig(t, srv.URL(), "auto").with("GATEWAY_RATE_LIMIT_PER_TENANT", fmt.Sprintf("%d/1s", rateLimit)))[0]
		l.gws, l.bearers = append(l.gws, g), append(l.bearers, g.bearer(t, limitedTenant, "quotes:read"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	l.run(ctx)
	return l.check(result{Run: "ratelimits/prefix-per-replica (control)", Fault: "none", Durable: "auto"}, nil)
}
