package main

import (
	"context"
	"fmt"
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
		fmt.Sprintf("GATEWAY_CASE_MAX_ESCALATION=%d", caseMaxEscalation))
	// Rate limits on but never reached: every bearer and session scenario pays for counting,
	// none is refused. The gateway-nolimit phase turns them off for quote-get-nolimit.
	limited := []string{"GATEWAY_RATE_LIMIT_PER_TOKEN=1000000000/1m", "GATEWAY_RATE_LIMIT_PER_TENANT=1000000000/1m",
		"GATEWAY_RATE_LIMIT_PER_SESSION=1000000000/1m"}
	unlimited := []string{"GATEWAY_RATE_LIMIT_PER_TOKEN=0", "GATEWAY_RATE_LIMIT_PER_TENANT=0", "GATEWAY_RATE_LIMIT_PER_SESSION=0"}
	fx := &fixtures{cfg: b.cfg}
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
	for _, ph := range []phase{{"gateway", "true", limited, fx.gatewayPlans(), nil}, {"gateway-nocache", "false", limited, fx.noCachePlans(), nil},
		{"gateway-nolimit", "true", unlimited, fx.noLimitPlans(), nil},
		{"gateway-revoke", "true", limited, fx.revokePlans("session-revoke", "no replica: no WAIT"), nil},
		{"gateway-revoke-replica", "true", limited, fx.revokePlans("session-revoke-replica", "one replica: WAIT 1 + WAITAOF"), b.startReplica},
		{"gateway-revoke-replica-noaof", "true", append(slices.Clip(limited), "GATEWAY_DURABLE_AOF=off"),
			fx.revokePlans("session-revoke-replica-noaof", "one replica: WAIT 1 (GATEWAY_DURABLE_AOF=off)"), b.startReplica}} {
		var plans []plan
		for _, p := range ph.plans {
			if b.cfg.selected(p.Key) {
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
		b.logf("starting %s (GATEWAY_REDIS_CLIENT_CACHE=%s)", ph.name, ph.cache)
		gw, err := startGateway(ctx, ph.name, bin, b.dir, append(append(slices.Clip(env), ph.limits...), "GATEWAY_REDIS_CLIENT_CACHE="+ph.cache))
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
				continue
			}
			b.measure(ctx, r, gw.Base, gw.Base+"/metrics", warm, measure)
			if p.Key == "authz-session" {
				b.pairedRounds(ctx, gw.Base, measure)
			}
		}
		gw.stop(20 * time.Second)
	}
	return fx, ctx.Err()
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

// pairedRounds measures the HTTP ceiling and authorize by session back to back, cfg.rounds
// times, alternating which goes first (ABBA), so slow drift of a shared machine's speed
// between two rows does not decide the ratio. Both servers are warm: no warm-up.
func (b *bench) pairedRounds(ctx context.Context, gwBase string, gwScript wrkScript) {
	if b.ceiling == nil || b.cfg.rounds <= 0 {
		return
	}
	b.logf("paired rounds: %d × (HTTP ceiling, authorize by session), %s each, alternating order", b.cfg.rounds, b.cfg.duration)
	for i := 0; i < b.cfg.rounds && ctx.Err() == nil; i++ {
		var pr pairedRound
		runs := []func() error{
			func() error {
				res, err := b.wrk.run(ctx, fmt.Sprintf("paired-ceiling-%d", i), b.ceiling.script, b.ceiling.base, b.cfg.duration)
				pr.Ceiling = res.RPS()
				return err
			},
			func() error {
				res, err := b.wrk.run(ctx, fmt.Sprintf("paired-authz-session-%d", i), gwScript, gwBase, b.cfg.duration)
				pr.Gateway = res.RPS()
				return err
			},
		}
		if i%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			if err := run(); err != nil {
				b.logf("paired round %d: %v", i+1, err)
				return
			}
			settle()
		}
		b.paired = append(b.paired, pr)
		b.logf("paired round %d: ceiling %.0f req/s, authorize by session %.0f req/s (%.2f ×)", i+1, pr.Ceiling, pr.Gateway, pr.Gateway/pr.Ceiling)
	}
	b.ceiling.proc.stop(5 * time.Second)
	b.ceiling = nil
}

// startReplica starts a replica of the benchmark's Redis (diskless sync at once) and waits
// until the primary counts it online: from then on the gateway's durable writes (revocations)
// wait for it (GATEWAY_DURABLE_REPLICAS=auto).
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
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(infoField(ctx, b.redis.Client, "replication", "slave0"), "state=online") {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the replica did not come online within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
