package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The gateway phases: each starts a gateway with its settings and measures its scenarios.

// gateways runs the gateway scenarios: first with client-side caching (the default), then a
// second gateway with GATEWAY_REDIS_CLIENT_CACHE=false on the same Redis and keys.
func (b *bench) gateways(ctx context.Context, bin string, keys []string) (*fixtures, error) {
	env := append(baseEnv(), keys...)
	env = append(env, "REDIS_URL="+b.redis.URL(), "GATEWAY_LOG_LEVEL=warn", "GATEWAY_KEY_PREFIX="+keyPrefix,
		fmt.Sprintf("GATEWAY_CASE_MAX_ESCALATION=%d", caseMaxEscalation), fmt.Sprintf("GATEWAY_TENANT_MAX_CASES=%d", benchMaxCases))
	// Rate limits on but never reached: every bearer and session scenario pays for counting,
	// none is refused. The limiter's cost is read from two fresh gateways that differ only in
	// the limits: gateway-limits runs quote-get alone, and with -rounds > 0 the gateway-nolimit
	// one starts right after that row, next to it, for the paired rounds of the two (then its
	// own phase has nothing left to run). Measured on the gateway that had already run the
	// rows before it, the pair also counted what those rows left behind (caches, heap).
	limited := []string{"GATEWAY_RATE_LIMIT_PER_TOKEN=1000000000/1m", "GATEWAY_RATE_LIMIT_PER_TENANT=1000000000/1m",
		"GATEWAY_RATE_LIMIT_PER_SESSION=1000000000/1m"}
	unlimited := []string{"GATEWAY_RATE_LIMIT_PER_TOKEN=0", "GATEWAY_RATE_LIMIT_PER_TENANT=0", "GATEWAY_RATE_LIMIT_PER_SESSION=0"}
	fx := &fixtures{cfg: b.cfg}
	fx.mint = func(ctx context.Context, tenant string) (string, error) {
		return mintToken(ctx, bin, env, tenant, "cases:read cases:write")
	}
	// An escalation is a write script: no faster than the fastest gateway scenario so far.
	fx.rateHint = func() float64 {
		best := 0.0
		for _, r := range b.rows {
			if r.Gateway && r.measured() {
				best = max(best, r.Res.RPS())
			}
		}
		return best
	}
	type phase struct {
		name, cache string
		limits      []string
		plans       []plan
		before      func(context.Context) error // runs first, when a plan of the phase is selected
	}
	noLimit := phase{"gateway-nolimit", "true", unlimited, fx.noLimitPlans(), nil}
	// The access rules' pair: a gateway with the rules file, then next to it (same Redis,
	// sessions and wrk script) the same configuration without it.
	rulesPlan, noRulesPlan := fx.rulesPlans()
	rulesPath := filepath.Join(b.dir, "access-rules.yaml")
	withRules := phase{"gateway-rules", "true", append(slices.Clip(limited), "GATEWAY_ACCESS_RULES="+rulesPath), []plan{rulesPlan},
		func(context.Context) error { return os.WriteFile(rulesPath, rulesFile(rulesCount), 0o600) }}
	noRules := phase{"gateway-norules", "true", limited, []plan{noRulesPlan}, nil}
	noEvents := phase{"gateway-noevents", "true", append(slices.Clip(limited), "GATEWAY_EVENTS=false"), fx.noEventsPlans(), nil}
	start := func(ph phase) (*gateway, error) {
		b.logf("starting %s (GATEWAY_REDIS_CLIENT_CACHE=%s)", ph.name, ph.cache)
		return startGateway(ctx, ph.name, bin, b.dir, append(append(slices.Clip(env), ph.limits...), "GATEWAY_REDIS_CLIENT_CACHE="+ph.cache))
	}
	done := map[string]bool{} // measured ahead of their phase: quote-get-nolimit, next to quote-get
	for _, ph := range []phase{{"gateway", "true", limited, fx.gatewayPlans(), nil},
		{"gateway-limits", "true", limited, fx.limitPlans(), nil}, withRules,
		{"gateway-nocache", "false", limited, fx.noCachePlans(), nil}, noLimit,
		noEvents,
		{"gateway-revoke", "true", limited, fx.revokePlans("session-revoke", "no replica: no WAIT"), nil},
		{"gateway-revoke-replica", "true", limited, fx.revokePlans("session-revoke-replica", "one replica: WAIT 1 + WAITAOF"), b.startReplica},
		{"gateway-revoke-replica-noaof", "true", append(slices.Clip(limited), "GATEWAY_DURABLE_AOF=off"),
			fx.revokePlans("session-revoke-replica-noaof", "one replica: WAIT 1 (GATEWAY_DURABLE_AOF=off)"), b.startReplica}} {
		var plans []plan
		for _, p := range ph.plans {
			if b.cfg.selected(p.Key) && !done[p.Key] {
				plans = append(plans, p)
			}
		}
		if len(plans) == 0 || ctx.Err() != nil {
			continue
		}
		if ph.before != nil {
			if err := ph.before(ctx); err != nil {
				return nil, err
			}
		}
		gw, err := start(ph)
		if err != nil {
			return nil, err
		}
		if fx.api == nil {
			fx.api, err = newAPI(gw.Base, gw.Admin)
		} else {
			err = fx.api.setBase(gw.Base)
		}
		if err != nil {
			return nil, err
		}
		for _, p := range plans {
			if ctx.Err() != nil {
				break
			}
			measure, ok := b.runPlan(ctx, p, gw)
			switch {
			case p.Key == "authz-session" && b.ceiling != nil:
				if ok {
					b.paired = b.pairedRounds(ctx, side("HTTP ceiling", "ceiling", b.ceiling.base, b.ceiling.script),
						side("authorize by session", "authz-session", gw.Base, measure))
				}
				b.ceiling.proc.stop(5 * time.Second)
				b.ceiling = nil
			case p.Key == "quote-get" && ok && b.cfg.rounds > 0 && b.cfg.selected("quote-get-nolimit"):
				// The gateway with every limit off runs next to this one (same Redis, same
				// quotes, same token): its row, then the two in paired rounds.
				done["quote-get-nolimit"] = true
				off, err := start(noLimit)
				if err != nil {
					gw.stop(20 * time.Second)
					return nil, err
				}
				if offScript, ok := b.runPlan(ctx, noLimit.plans[0], off); ok {
					b.limitPaired = b.pairedRounds(ctx, side("quote-get-nolimit", "quote-get-nolimit", off.Base, offScript),
						side("quote-get (limits on)", "quote-get", gw.Base, measure))
				}
				off.stop(20 * time.Second)
			case ok && b.cfg.rounds > 0 && slices.Contains(eventsPairedRows, p.Key) && b.cfg.selected(p.Key+noEventsSuffix):
				// A write row's events cost: a gateway with events off starts next to this one
				// (same Redis), runs the row, then the two alternate in paired rounds: the rows
				// alone run minutes apart, and carry what changed meanwhile.
				i := slices.IndexFunc(noEvents.plans, func(q plan) bool { return q.Key == p.Key+noEventsSuffix })
				done[noEvents.plans[i].Key] = true
				off, err := start(noEvents)
				if err != nil {
					gw.stop(20 * time.Second)
					return nil, err
				}
				if offScript, ok := b.runPlan(ctx, noEvents.plans[i], off); ok {
					offSide, onSide := b.eventsSides(p, off.Base, offScript, gw.Base, measure)
					b.eventsPaired[p.Key] = b.pairedRounds(ctx, offSide, onSide)
				}
				off.stop(20 * time.Second)
			case p.Key == "authz-rules" && ok:
				// Without -rounds the no-rules row alone gives the ratio.
				off, err := start(noRules)
				if err != nil {
					gw.stop(20 * time.Second)
					return nil, err
				}
				if offScript, ok := b.runPlan(ctx, noRulesPlan, off); ok {
					b.rulesPaired = b.pairedRounds(ctx, side("authorize, no rules", "authz-norules", off.Base, offScript),
						side(fmt.Sprintf("authorize, %d rules", rulesCount), "authz-rules", gw.Base, measure))
				}
				off.stop(20 * time.Second)
			}
		}
		gw.stop(20 * time.Second)
	}
	return fx, ctx.Err()
}

// runPlan sets up one plan and measures its row against gw. It returns the measured script
// and whether the row was measured.
func (b *bench) runPlan(ctx context.Context, p plan, gw *gateway) (wrkScript, bool) {
	base := gw.Base
	r := row{Key: p.Key, Name: p.Name, Gateway: !p.durable, Expect: p.Expect}
	if p.durable {
		r.Note = "durable write: the write, then WAIT on its connection (2 round trips by design)"
	}
	b.logf("%s: set-up", p.Key)
	warm, measure, err := p.prepare(ctx)
	if err != nil {
		r.Skip = skipReason(err)
		b.logf("%s: %s", p.Key, r.Skip)
		b.rows = append(b.rows, r)
		return measure, false
	}
	b.measure(ctx, r, base, gw.Ops+"/metrics", warm, measure)
	return measure, b.rows[len(b.rows)-1].measured()
}

func skipReason(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return "failed: " + msg
}

// measure probes, warms up, then measures one scenario and appends its row.
func (b *bench) measure(ctx context.Context, r row, base, metricsURL string, warm, measure wrkScript) {
	defer func() { b.rows = append(b.rows, r) }()
	if err := probe(ctx, base, warm, r.Expect); err != nil {
		r.Skip = skipReason(err)
		b.logf("%s: %s", r.Key, r.Skip)
		return
	}
	b.logf("%s: warm-up %s, run %s", r.Key, b.cfg.warmup, b.cfg.duration)
	if b.cfg.warmup > 0 {
		if _, err := b.wrk.run(ctx, r.Key+"-warmup", warm, base, b.cfg.warmup); err != nil {
			r.Skip = skipReason(err)
			return
		}
	}
	settle() // let the warm-up's last requests finish before the snapshot
	before, err := commandStatsOf(ctx, b.redis.Client)
	if err != nil {
		r.Skip = skipReason(err)
		return
	}
	var cc0 clientCalls
	ccOK := metricsURL != ""
	if ccOK {
		cc0, ccOK = scrapeClientCalls(ctx, metricsURL)
	}
	res, err := b.wrk.run(ctx, r.Key, measure, base, b.cfg.duration)
	if err != nil {
		r.Skip = skipReason(err)
		return
	}
	settle() // requests in flight when wrk stopped still reach Redis: count them in this window
	after, err := commandStatsOf(ctx, b.redis.Client)
	if err != nil {
		r.Skip = skipReason(err)
		return
	}
	r.Res, r.Cmds, r.RT = res, after.delta(before), -1
	switch {
	case metricsURL == "":
		r.RT = 0 // the HTTP ceiling has no Redis client
	case ccOK && res.Requests > 0:
		if cc1, ok := scrapeClientCalls(ctx, metricsURL); ok {
			r.Client = cc1.sub(cc0)
			r.RT = r.Client.RoundTrips() / float64(res.Requests)
		}
	}
	share, other := r.okShare()
	b.logf("%s: %.0f req/s, p99 %s ms, %.1f%% expected %s", r.Key, res.RPS(), ms(res.P99), 100*share, other)
}

// pairedSide is one server of a pair: its wrk script against its base URL.
type pairedSide struct {
	name, key string // for the log; the wrk run names
	base      string
	script    wrkScript
	// again, when set, makes a fresh script before each run (plan.again); expect, when set,
	// are the statuses a run must answer (99% of them), else the rounds end there.
	again  func(context.Context) (wrkScript, error)
	expect []int
}

// side is a pair's side that runs script again as it is.
func side(name, key, base string, script wrkScript) pairedSide {
	return pairedSide{name: name, key: key, base: base, script: script}
}

// eventsSides are the two sides of write row p's events pair: the events-off gateway's (the
// reference) and the row's. A row whose requests use up what they act on gets a fresh script
// for every run, both sides sized for the faster of the two rows, each set up through its own
// gateway.
func (b *bench) eventsSides(p plan, offBase string, offScript wrkScript, onBase string, onScript wrkScript) (off, on pairedSide) {
	off, on = side(p.Key+noEventsSuffix, p.Key+noEventsSuffix, offBase, offScript), side(p.Key, p.Key, onBase, onScript)
	off.expect, on.expect = p.Expect, p.Expect
	if p.again != nil {
		rate := 0.0
		for _, r := range b.rows {
			if r.measured() && (r.Key == p.Key || r.Key == p.Key+noEventsSuffix) {
				rate = max(rate, r.Res.RPS())
			}
		}
		off.again = func(ctx context.Context) (wrkScript, error) { return p.again(ctx, offBase, rate) }
		on.again = func(ctx context.Context) (wrkScript, error) { return p.again(ctx, onBase, rate) }
	}
	return off, on
}

// pairedRounds measures ref and subject back to back, cfg.rounds times, alternating which goes
// first (ABBA), so slow drift of a shared machine's speed between two rows does not decide the
// ratio. Both servers are warm: no warm-up. It returns the complete rounds.
func (b *bench) pairedRounds(ctx context.Context, ref, subject pairedSide) pairedRounds {
	if b.cfg.rounds <= 0 {
		return nil
	}
	b.logf("paired rounds: %d × (%s, %s), %s each, alternating order", b.cfg.rounds, ref.name, subject.name, b.cfg.duration)
	ps, err := runPaired(ctx, b.cfg.rounds, func(i int, subj bool) (float64, error) {
		s := ref
		if subj {
			s = subject
		}
		if s.again != nil {
			var err error
			if s.script, err = s.again(ctx); err != nil {
				return 0, fmt.Errorf("%s: set-up: %w", s.name, err)
			}
			settle()
		}
		res, err := b.wrk.run(ctx, fmt.Sprintf("paired-%s-%d", s.key, i), s.script, s.base, b.cfg.duration)
		settle()
		if err == nil && s.expect != nil {
			err = expectedShare(s, res)
		}
		return res.RPS(), err
	})
	for i, p := range ps {
		b.logf("paired round %d: %s %.0f req/s, %s %.0f req/s (%.2f ×)", i+1, ref.name, p.Ref, subject.name, p.Subject, p.Subject/p.Ref)
	}
	if err != nil {
		b.logf("paired rounds of %s and %s: %v", ref.name, subject.name, err)
	}
	return ps
}

// expectedShare refuses a run of s whose answers are less than 99% of the statuses it
// expects (a script that ran out of what it acts on measures something else).
func expectedShare(s pairedSide, res wrkResult) error {
	r := row{Res: res, Expect: s.expect}
	if share, other := r.okShare(); share < 0.99 {
		return fmt.Errorf("%s: %.1f%% expected statuses (%s)", s.name, 100*share, other)
	}
	return nil
}

// runPaired runs n rounds of measure(round, subject): the ref (subject false) first in even
// rounds, the subject first in odd ones. It stops at the first error or when ctx ends, and
// returns the complete rounds.
func runPaired(ctx context.Context, n int, measure func(round int, subject bool) (float64, error)) (pairedRounds, error) {
	var ps pairedRounds
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return ps, err
		}
		var p pairedRound
		for j, subj := range [2]bool{i%2 == 1, i%2 == 0} {
			rps, err := measure(i, subj)
			if err != nil {
				return ps, fmt.Errorf("round %d, run %d: %w", i+1, j+1, err)
			}
			if subj {
				p.Subject = rps
			} else {
				p.Ref = rps
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// startReplica starts a replica of the benchmark's Redis (diskless sync at once) and waits
// until it serves: from then on the gateway's durable writes (revocations) wait for it
// (GATEWAY_DURABLE_REPLICAS=auto). The primary counts a replica online as soon as it has sent
// the dataset, while the replica is still loading it (seconds, after a full run's writes) and
// acknowledges nothing: every WAIT 1 then times out and the revocations answer 503. So the
// wait is for the replica's own link to be up and its load done.
func (b *bench) startReplica(ctx context.Context) error {
	if b.replica != nil {
		return nil
	}
	b.logf("starting a replica of the private Redis")
	r, err := startRedis(ctx, b.redisBin, b.dir, "redis-replica", "--replicaof", "127.0.0.1", strconv.Itoa(b.redis.Port),
		"--repl-diskless-sync-delay", "0")
	if err != nil {
		return err
	}
	b.replica = r
	start := time.Now()
	if err := replicaServing(ctx, b.redis.Client, r.Client, 2*time.Minute); err != nil {
		return err
	}
	b.logf("the replica serves after %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}
