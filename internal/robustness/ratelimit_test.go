package robustness

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Rate limits: clients of their own call through replicas of their own, built with the
// request-rate limits on (per tenant, per token, per session; the main workload's replicas run
// with the limits off) over the same deployment, so every fault reaches the
// limiter too. The limiter (internal/ratelimit/ratesync) decides from memory and syncs the
// counts through Redis; windows are fixed, aligned on the server's clock (here the test's).
//
// The property: in every window, the requests a limit counts that were admitted (any answer but
// 429) across all the replicas stay within limit × (1 + ε). ε is what the limiter's design allows (ratesync.Limiter):
//   - while Redis answers, a replica overshoots by what the others admitted and had not yet
//     sent: at most (n − 1) × (SyncShare × limit + what one replica admits during a flush's
//     round trip). The round trip is measured, not assumed: a probe sends PING through each
//     limited replica's own Redis client (the flush's path, in the same process, so a loaded
//     machine's scheduling delays count too), and a window's ε is the formula evaluated with the
//     longest round trip seen during it — a flush waits for the one in flight, is applied, and
//     the other replica learns the total from its next reply: three round trips — and the most
//     any one replica admitted within that span; never below quietEpsilon (0.1: n = 2,
//     SyncShare = 0.02 and a few admissions per round trip);
//   - in a window a fault touches (Redis unreachable, stalled, or a failover to a replica
//     that lacks the latest counts) each replica enforces the limit on its own admissions and
//     on the totals Redis last answered, which a failover can roll back: up to n × limit plus
//     what was admitted before the counts were lost, faultEpsilon = n.

// The three limits are checked alike, each over the requests it counts:
//   - per tenant (rateLimit): limitedTenant's clients, each with a token of its own, so the
//     tenant's limit binds before any token's;
//   - per token (tokenLimit, below the tenant's): the clients of tokenTenant, all with one
//     token, so the token's limit binds before its tenant's;
//   - per session (sessionLimit): clients sending GET /v1/session/devices with one session's
//     token (the session limit counts the end user's operations but the two hot forward-auth
//     routes, GET /v1/authorize and GET /v1/session).
const (
	limitedTenant = "t-limited"
	tokenTenant   = "t-limited-token"
	rateLimit     = 100 // per second, per tenant
	tokenLimit    = 40  // per second, per token
	sessionLimit  = 40  // per second, per session
	quietEpsilon  = 0.1
	// syncShare is ratesync.Options.SyncShare's default, which the limited replicas run with.
	syncShare = 0.02
	// probeEvery paces the round-trip probe of each limited replica's Redis client.
	probeEvery = 20 * time.Millisecond
	// limitedClients per limited replica for the tenant's limit, one each for the token's and
	// the session's; each pauses limitedPace between requests, so the offered rate is several
	// times each limit without taking the machine.
	limitedClients = 2
	limitedPace    = 8 * time.Millisecond
)

// A limit the limited replicas enforce: the model's name (its results' Model) and the limit
// per one-second window.
type limitPolicy struct {
	model string
	limit int
}

var (
	perTenant  = limitPolicy{"ratelimits", rateLimit}
	perToken   = limitPolicy{"ratelimits-token", tokenLimit}
	perSession = limitPolicy{"ratelimits-session", sessionLimit}
)

// limitedOp is one request of the limited clients: which limit counts it, call and return,
// admitted or not, or never answered (a transport failure, which the checker counts as
// possibly admitted).
type limitedOp struct {
	policy            limitPolicy
	replica           int // index in limiterRun.gws
	call, ret         time.Time
	admitted, unknown bool
	// gw answered it; remaining is what its RateLimit field said was left of the limit in the
	// limiter's window (-1: not said).
	gw        *gateway
	remaining int
}

// roundTrip is one probe of a limited replica's Redis client: when it was sent, how long the
// answer took (a probe never answered counts as the whole wait).
type roundTrip struct {
	at  time.Time
	rtt time.Duration
}

// limitedClient is one client of the limited replicas: the replica it calls, the request it
// repeats, and the limit the check holds it to.
type limitedClient struct {
	g       *gateway
	policy  limitPolicy
	path    string
	headers []string
}

type limiterRun struct {
	gws     []*gateway
	clients []limitedClient
	mu      sync.Mutex
	ops     []limitedOp
	probes  []roundTrip
}

// limitedSpec is the limited replicas' configuration over url: the three limits on.
func limitedSpec(t *testing.T, url, durable string) gatewaySpec {
	return gatewayConfig(t, url, durable).with("GATEWAY_RATE_LIMIT_PER_TENANT", fmt.Sprintf("%d/1s", rateLimit)).
		with("GATEWAY_RATE_LIMIT_PER_TOKEN", fmt.Sprintf("%d/1s", tokenLimit)).
		with("GATEWAY_RATE_LIMIT_PER_SESSION", fmt.Sprintf("%d/1s", sessionLimit))
}

// missingQuote is a quote id no draft has: reading it is a 404 after one Redis read, admitted
// like any other answer but 429.
const missingQuote = "/v1/quotes/q_0000000000000000000000000z"

// startLimited builds the limited replicas over url and their clients: per replica,
// limitedClients of limitedTenant (a token each), one of tokenTenant (one token for all) and
// one of a session (one for all).
func startLimited(t *testing.T, url, durable string, n int) *limiterRun {
	t.Helper()
	l := &limiterRun{gws: startGateways(t, slices.Repeat([]gatewaySpec{limitedSpec(t, url, durable)}, n)...)}
	g0 := l.gws[0]
	shared := g0.bearer(t, tokenTenant, "quotes:read")
	r := g0.do("POST", "/v1/sessions", map[string]any{"userId": "user-limited", "authLevel": "BASIC"},
		"Authorization", g0.bearer(t, tokenTenant, "sessions:write"))
	var s struct{ Token string }
	if r.status != 201 || r.decode(&s) != nil || s.Token == "" {
		t.Fatalf("limited session: %d %s", r.status, r.body)
	}
	for _, g := range l.gws {
		for range limitedClients {
			l.clients = append(l.clients, limitedClient{g, perTenant, missingQuote, []string{"Authorization", g0.bearer(t, limitedTenant, "quotes:read")}})
		}
		l.clients = append(l.clients, limitedClient{g, perToken, missingQuote, []string{"Authorization", shared}},
			limitedClient{g, perSession, "/v1/session/devices", []string{"X-Session-Token", s.Token}})
	}
	return l
}

// run sends requests from every client until ctx ends, and probes each replica's round trip
// to Redis meanwhile.
func (l *limiterRun) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, g := range l.gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.probe(ctx, g)
		}()
	}
	for _, c := range l.clients {
		replica := slices.Index(l.gws, c.g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				call := time.Now()
				r := c.g.do("GET", c.path, nil, c.headers...)
				op := limitedOp{policy: c.policy, replica: replica, call: call, ret: time.Now(), unknown: r.status == 0,
					admitted: r.status != 0 && r.status != http.StatusTooManyRequests, gw: c.g, remaining: remaining(r.header, c.policy.limit)}
				l.mu.Lock()
				l.ops = append(l.ops, op)
				l.mu.Unlock()
				time.Sleep(limitedPace)
			}
		}()
	}
	wg.Wait()
}

// probe sends PING through g's Redis client every probeEvery until ctx ends, recording each
// round trip.
func (l *limiterRun) probe(ctx context.Context, g *gateway) {
	for ctx.Err() == nil {
		at := time.Now()
		pctx, cancel := context.WithTimeout(ctx, requestTimeout)
		_ = g.store.Client.Do(pctx, g.store.Client.B().Ping().Build()).Error()
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		l.probes = append(l.probes, roundTrip{at, time.Since(at)})
		l.mu.Unlock()
		time.Sleep(probeEvery)
	}
}

// check checks each limit over the requests it counts (checkPolicy), in the order tenant,
// token, session; a limit no client exercised has no result.
func (l *limiterRun) check(r result, spans [][2]time.Time) []result {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []result
	for _, p := range []limitPolicy{perTenant, perToken, perSession} {
		var ops []limitedOp
		for _, op := range l.ops {
			if op.policy == p {
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			out = append(out, checkPolicy(p, ops, l.probes, len(l.gws), r, spans))
		}
	}
	return out
}

// checkPolicy counts, per whole one-second window, the requests p certainly admitted in it
// (call and return inside it) and compares them with the bound: the quiet one (quietEpsilon, or
// the design's overshoot at the round trips probed around the window: quietBound), or
// faultEpsilon (n, the replicas) in a window within a second of a fault's span. Objects are
// windows; violations, windows over their bound; the notes give the largest ratio of each kind,
// how many windows a slow round trip stretched, and how many a fault excused.
func checkPolicy(p limitPolicy, ops []limitedOp, probes []roundTrip, n int, r result, spans [][2]time.Time) result {
	r.Model, r.Ops = p.model, len(ops)
	certain := map[int64]int{}
	sorted := slices.SortedFunc(slices.Values(ops), func(a, b limitedOp) int { return a.call.Compare(b.call) })
	turned := turns(sorted)
	first, last := ops[0].call.UnixMilli()/1000, ops[0].ret.UnixMilli()/1000
	refused := 0
	for _, op := range ops {
		if op.unknown {
			r.Unknown++
		}
		if !op.admitted && !op.unknown {
			refused++
		}
		w := op.call.UnixMilli() / 1000
		first, last = min(first, w), max(last, op.ret.UnixMilli()/1000)
		if op.admitted && w == op.ret.UnixMilli()/1000 {
			certain[w]++
		}
	}
	faultEpsilon := float64(n)
	var quietMax, faultMax, stretchMax float64
	var quietMaxW int64
	var disturbedN, excused, stretched int
	var slowest time.Duration
	for w := first + 1; w < last; w++ { // the whole windows only
		from, to := time.UnixMilli(w*1000), time.UnixMilli((w+1)*1000)
		disturbed := false
		for _, s := range spans {
			disturbed = disturbed || from.Before(s[1].Add(time.Second)) && to.After(s[0].Add(-time.Second))
		}
		ratio := float64(certain[w]) / float64(p.limit)
		eps, rtt := quietBound(p, ops, probes, n, from, to)
		if eps > quietEpsilon {
			stretched++
			stretchMax, slowest = max(stretchMax, eps), max(slowest, rtt)
		}
		if disturbed {
			eps, faultMax = faultEpsilon, max(faultMax, ratio)
			disturbedN++
			if ratio > 1+quietEpsilon && ratio <= 1+eps {
				excused++
			}
		} else {
			if ratio > quietMax {
				quietMax, quietMaxW = ratio, w
			}
		}
		r.Objects++
		if ratio > 1+eps {
			r.Violations++
			r.Notes = append(r.Notes, fmt.Sprintf("window %s: %d admitted (limit %d, ε %.2f, disturbed %v; %s)",
				from.UTC().Format(time.RFC3339), certain[w], p.limit, eps, disturbed, splitNote(bySegment(sorted, turned, w*1000, (w+1)*1000))))
		}
	}
	// The refusals show the limit was reached: a check of windows under it proves nothing.
	r.Notes = append(r.Notes, fmt.Sprintf("%d of %d requests refused (429)", refused, len(ops)),
		fmt.Sprintf("largest admitted/limit: %.2f in quiet windows (%s: %d, %s), %.2f in windows a fault touched", quietMax,
			time.UnixMilli(quietMaxW*1000).UTC().Format(time.RFC3339), certain[quietMaxW], splitNote(bySegment(sorted, turned, quietMaxW*1000, (quietMaxW+1)*1000)), faultMax),
		fmt.Sprintf("%d of %d windows disturbed (within 1 s of one of %d fault spans), %d of them over the quiet bound %.2f and held to %.2f only",
			disturbedN, r.Objects, len(spans), excused, 1+quietEpsilon, 1+faultEpsilon),
		fmt.Sprintf("%d windows' quiet ε stretched past %.2f by a slow round trip to Redis: up to %.2f (round trip up to %v)",
			stretched, quietEpsilon, stretchMax, slowest.Round(time.Millisecond)))
	return r
}

// quietBound is the limiter's design bound on a window [from, to) while Redis answers, as ε:
// (n − 1) × (SyncShare × limit, at least one request, + the most one replica admitted within
// three of the longest round trips probed during the window) / limit, at least quietEpsilon.
// Counts are per window, so only the round trips the window overlaps delay what it admits. It returns that round trip too.
func quietBound(p limitPolicy, ops []limitedOp, probes []roundTrip, n int, from, to time.Time) (float64, time.Duration) {
	var rtt time.Duration
	for _, pr := range probes {
		if pr.at.Before(to) && pr.at.Add(pr.rtt).After(from) {
			rtt = max(rtt, pr.rtt)
		}
	}
	span := 3 * rtt
	most := 0
	for replica := range n {
		var calls []time.Time
		for _, op := range ops {
			if op.replica == replica && op.admitted && !op.call.Before(from.Add(-span)) && op.call.Before(to) {
				calls = append(calls, op.call)
			}
		}
		slices.SortFunc(calls, time.Time.Compare)
		for i, j := 0, 0; j < len(calls); j++ { // the most calls within any span-long stretch
			for calls[j].Sub(calls[i]) > span {
				i++
			}
			most = max(most, j-i+1)
		}
	}
	unsent := max(1, int(math.Ceil(syncShare*float64(p.limit))))
	eps := float64((n-1)*(unsent+most)) / float64(p.limit)
	return max(quietEpsilon, eps), rtt
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
		// A prefix of its own (and keys of its own: its tokens are its own).
		g := startGateways(t, limitedSpec(t, srv.URL(), "auto"))[0]
		l.gws = append(l.gws, g)
		for range limitedClients {
			l.clients = append(l.clients, limitedClient{g, perTenant, missingQuote, []string{"Authorization", g.bearer(t, limitedTenant, "quotes:read")}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	l.run(ctx)
	return l.check(result{Run: "ratelimits/prefix-per-replica (control)", Fault: "none", Durable: "auto"}, nil)[0]
}
