// Command bench is hashgate's benchmark (`make bench`). On loopback it starts a private Redis 8,
// builds the gateway with the release flags and starts it, sets up each scenario through the
// public API, loads it with wrk at fixed concurrency for a fixed time after a warm-up, and
// prints one table: throughput, p50/p99/p99.9 latency, Redis commands and round trips per
// request, and ratios against three baselines measured in the same run (the HTTP ceiling, the
// Redis ceiling, the naive seed-004 design). Then the Redis memory per object, and the targets.
//
//	go run ./cmd/bench [-t 2] [-c 64] [-d 10s] [-warmup 3s] [-scenarios a,b] [-enforce]
//	go run ./cmd/bench -scenarios scale-10k,scale-100k,scale-1m   # issue 12: N live sessions (scale-1m is opt-in)
//
// It is not part of the test run. scripts/bench.sh installs wrk and provisions Redis 8 first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "serve-") {
		if err := serveBaseline(os.Args[1], os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the benchmark's flags.
type config struct {
	threads, connections int
	duration, warmup     time.Duration
	timeout              time.Duration
	sessions             int
	rounds               int
	scaleDraws           int             // Zipf draws in a scale script
	scaleWorkers         int             // parallel session creations of the scale scenarios
	scaleCreate          string          // repo or api
	only                 map[string]bool // the selected scenario keys
	enforce, keep        bool
	gatewayBin           string
	redisServer, wrkBin  string
}

// allKeys lists every scenario key in run order.
var allKeys = []string{"ceiling-http", "naive", "authz-session", "authz-rules", "authz-bearer", "whoami", "mfa-verify",
	"quote-patch", "quote-get", "case-escalate", "case-list", "session-create", "authz-session-nocache", "authz-bearer-nocache",
	"quote-get-nolimit", "mfa-verify-noevents", "quote-patch-noevents", "case-escalate-noevents", "session-create-noevents",
	"session-revoke", "session-revoke-replica",
	"session-revoke-replica-noaof", "scale-10k", "scale-100k", "scale-1m", "ceiling-redis"}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.threads, "t", 2, "wrk threads")
	fs.IntVar(&c.connections, "c", 64, "concurrent connections (and goroutines for the Redis ceiling)")
	fs.DurationVar(&c.duration, "d", 10*time.Second, "measured time per scenario")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "warm-up per scenario (not measured)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "wrk request timeout")
	fs.IntVar(&c.sessions, "sessions", 1000, "sessions (users) the session scenarios rotate over")
	fs.IntVar(&c.rounds, "rounds", 5, "paired rounds, alternating, of the HTTP ceiling and authorize by session (the ceiling target) and of quote-get with and without rate limits (the limiter's cost), of authorize with and without access rules (the rules' cost), of each write row with events on and off (the events' cost) (0: off)")
	fs.IntVar(&c.scaleDraws, "scale-draws", 200000, "Zipf draws in a scale scenario's wrk script (walked in order, then again)")
	fs.IntVar(&c.scaleWorkers, "scale-workers", 48, "parallel session creations of the scale scenarios")
	fs.StringVar(&c.scaleCreate, "scale-create", "repo", "how the scale scenarios create sessions: repo (the session service in this process) or api (POST /v1/sessions)")
	only := fs.String("scenarios", "all", "comma-separated scenario keys, or all (every one but "+strings.Join(optInKeys, ", ")+
		", which must be named: all,scale-1m): "+strings.Join(allKeys, ", "))
	fs.BoolVar(&c.enforce, "enforce", false, "exit 1 when a target is missed or could not be measured")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary folder (scripts, logs, Redis data)")
	fs.StringVar(&c.gatewayBin, "gateway", "", "a prebuilt gateway binary (default: build ./cmd/gateway like the Dockerfile)")
	fs.StringVar(&c.redisServer, "redis-server", "", "Redis 8 server executable (default: $HASHGATE_REDIS8_SERVER, then .cache/redis/bin/redis8-server)")
	fs.StringVar(&c.wrkBin, "wrk", "wrk", "wrk executable")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch {
	case c.threads < 1 || c.connections < c.threads:
		return c, errors.New("-t must be ≥ 1 and -c ≥ -t")
	case c.duration < time.Second || c.warmup < 0 || c.timeout < time.Second:
		return c, errors.New("-d and -timeout must be ≥ 1s, -warmup ≥ 0")
	case c.sessions < 1 || c.sessions > 100000:
		return c, errors.New("-sessions must be within 1..100000")
	case c.scaleDraws < 1000 || c.scaleWorkers < 1:
		return c, errors.New("-scale-draws must be ≥ 1000 and -scale-workers ≥ 1")
	case c.scaleCreate != "repo" && c.scaleCreate != "api":
		return c, errors.New("-scale-create must be repo or api")
	}
	c.only = map[string]bool{}
	for _, k := range strings.Split(*only, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "all":
			for _, a := range allKeys {
				if !slices.Contains(optInKeys, a) {
					c.only[a] = true
				}
			}
		case !slices.Contains(allKeys, k):
			return c, fmt.Errorf("unknown scenario %q (known: all, %s)", k, strings.Join(allKeys, ", "))
		default:
			c.only[k] = true
		}
	}
	return c, nil
}

func (c config) selected(key string) bool { return c.only[key] }

// bench holds the run's shared state.
type bench struct {
	cfg   config
	log   io.Writer
	dir   string
	redis *redisServer
	// redisBin starts the replica of the durable-revocation scenario (replica, once started).
	redisBin string
	replica  *redisServer
	wrk      wrkRunner
	rows     []row
	// ceiling is the HTTP ceiling server, kept running for the paired rounds.
	ceiling *ceilingServer
	// paired: HTTP ceiling (ref) and authorize by session; limitPaired: quote-get-nolimit (ref)
	// and quote-get.
	paired, limitPaired pairedRounds
	// rulesPaired: authz-norules (ref) and authz-rules, two gateways with and without the
	// access rules file.
	rulesPaired pairedRounds
	// eventsPaired: each write row's events-off twin (ref) and the row, by the row's key.
	eventsPaired map[string]pairedRounds
	// scaleRows and scaleBatches are the scale scenarios' measurements and session creation.
	scaleRows    []scaleRow
	scaleBatches []scaleBatch
}

// ceilingServer is the running HTTP ceiling and the wrk script its row used.
type ceilingServer struct {
	proc   *proc
	base   string
	script wrkScript
}

func (b *bench) logf(format string, a ...any) { fmt.Fprintf(b.log, "[bench] "+format+"\n", a...) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	rp, err := runBench(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	rp.print(stdout)
	if cfg.enforce && rp.failed() {
		fmt.Fprintln(stderr, "bench: a target was missed (-enforce)")
		return 1
	}
	return 0
}

func runBench(ctx context.Context, cfg config, logw io.Writer) (*report, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	redisBin, err := findRedisServer(cfg.redisServer, root)
	if err != nil {
		return nil, err
	}
	wrkBin, err := exec.LookPath(cfg.wrkBin)
	if err != nil {
		return nil, fmt.Errorf("wrk not found (%v): run scripts/bench.sh, or apt-get install wrk", err)
	}
	dir, err := os.MkdirTemp("", "hashgate-bench-")
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, log: logw, dir: dir, eventsPaired: map[string]pairedRounds{},
		wrk: wrkRunner{Bin: wrkBin, Threads: cfg.threads, Connections: cfg.connections, Timeout: cfg.timeout, Dir: dir}}
	defer func() {
		if cfg.keep {
			b.logf("kept %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()

	b.logf("starting a private Redis 8 (%s)", redisBin)
	b.redisBin = redisBin
	b.redis, err = startRedis(ctx, redisBin, dir, "redis")
	if err != nil {
		return nil, err
	}
	defer b.redis.stop()
	defer func() {
		if b.replica != nil {
			b.replica.stop()
		}
	}()
	redisVersion := infoField(ctx, b.redis.Client, "server", "redis_version")

	gwBin := cfg.gatewayBin
	if gwBin == "" {
		gwBin = filepath.Join(dir, "gateway")
		b.logf("building the gateway: CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\" ./cmd/gateway")
		if err := buildGateway(ctx, root, gwBin); err != nil {
			return nil, err
		}
	}
	keys, err := keygen(ctx, gwBin)
	if err != nil {
		return nil, err
	}

	if err := b.baselines(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if b.ceiling != nil {
			b.ceiling.proc.stop(5 * time.Second)
		}
	}()
	fx, err := b.gateways(ctx, gwBin, keys)
	if err != nil {
		return nil, err
	}
	if err := b.scale(ctx, gwBin, keys); err != nil {
		return nil, err
	}
	b.redisCeilingRow(ctx)
	rp := &report{
		Machine: machine(redisVersion, wrkVersion(wrkBin)),
		Command: fmt.Sprintf("Command: go run ./cmd/bench -t %d -c %d -d %s -warmup %s -rounds %d  (wrk -t%d -c%d; gateway built with CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w\"; Redis appendonly yes, appendfsync everysec)",
			cfg.threads, cfg.connections, cfg.duration, cfg.warmup, cfg.rounds, cfg.threads, cfg.connections),
		Rows:   b.rows,
		Paired: b.paired, LimitPaired: b.limitPaired, RulesPaired: b.rulesPaired, EventsPaired: b.eventsPaired,
		Scale: b.scaleRows, ScaleBatches: b.scaleBatches,
	}
	b.logf("measuring Redis memory")
	rp.Memory = b.memory(ctx, fx)
	if rp.Patterns, err = scanGroups(ctx, b.redis.Client, keyPrefix+":v1:*", 200); err != nil {
		b.logf("key scan: %v", err)
	}
	rp.evaluate(256)
	rp.evaluateScale()
	return rp, ctx.Err()
}

// baselines measures the HTTP ceiling and the naive design, right before the gateway's
// authorize scenarios (the ratios the targets use compare runs close in time).
func (b *bench) baselines(ctx context.Context) error {
	cookies := func(toks []string) wrkScript {
		return wrkScript{Method: "GET", Items: itemsWithHeader("/v1/authorize", "Cookie", sessionCookie+"=", toks)}
	}
	if b.cfg.selected("ceiling-http") {
		p, base, err := startBaseline(ctx, "ceiling-http", b.dir, "serve-ceiling")
		if err != nil {
			return err
		}
		toks := make([]string, b.cfg.sessions)
		for i := range toks {
			toks[i] = randomHex(32)
		}
		s := cookies(toks)
		b.measure(ctx, row{Key: "ceiling-http", Name: "baseline: Echo, same JSON, no Redis (HTTP ceiling)", Expect: []int{200}}, base, "", s, s)
		if b.cfg.rounds > 0 && b.cfg.selected("authz-session") {
			b.ceiling = &ceilingServer{proc: p, base: base, script: s} // stopped after the paired rounds
		} else {
			p.stop(5 * time.Second)
		}
	}
	if b.cfg.selected("naive") {
		toks, err := seedNaive(ctx, b.redis.Client, b.cfg.sessions)
		if err != nil {
			return err
		}
		p, base, err := startBaseline(ctx, "naive", b.dir, "serve-naive", "-redis", b.redis.URL())
		if err != nil {
			return err
		}
		s := cookies(toks)
		b.measure(ctx, row{Key: "naive", Name: "baseline: naive seed-004 server (HGETALL; HSET+EXPIRE)", Expect: []int{200}}, base, base+"/metrics", s, s)
		p.stop(5 * time.Second)
	}
	return ctx.Err()
}

// redisCeilingRow measures rueidis HMGET alone at the benchmark's concurrency.
func (b *bench) redisCeilingRow(ctx context.Context) {
	if b.cfg.selected("ceiling-redis") && ctx.Err() == nil {
		b.logf("ceiling-redis: rueidis HMGET × %d goroutines, warm-up %s, run %s", b.cfg.connections, b.cfg.warmup, b.cfg.duration)
		r := row{Key: "ceiling-redis", Name: "baseline: rueidis HMGET alone (Redis ceiling)", Expect: []int{200}, RT: 1}
		var before commandStats
		res, err := redisCeiling(ctx, b.redis.URL(), b.cfg.connections, b.cfg.warmup, b.cfg.duration, func() {
			before, _ = commandStatsOf(ctx, b.redis.Client)
		})
		if err != nil {
			r.Skip = "failed: " + err.Error()
		} else if after, err := commandStatsOf(ctx, b.redis.Client); err == nil {
			r.Res, r.Cmds = res, after.delta(before)
			b.logf("ceiling-redis: %.0f ops/s", res.RPS())
		}
		b.rows = append(b.rows, r)
	}
}

func settle() { time.Sleep(300 * time.Millisecond) }

// pairedRound is one back-to-back measurement of two servers: Ref (the HTTP ceiling; the
// gateway with rate limits off) and Subject (authorize by session; the gateway with limits on).
type pairedRound struct {
	Ref, Subject float64 // req/s
}

// pairedRounds are the rounds of one pair; the pair's ratio is their median.
type pairedRounds []pairedRound

// median is the median of the rounds' Subject ÷ Ref ratios (the mean of the middle two for an
// even count; rounds without a Ref rate are left out), 0 without any.
func (ps pairedRounds) median() float64 {
	xs := make([]float64, 0, len(ps))
	for _, p := range ps {
		if p.Ref > 0 {
			xs = append(xs, p.Subject/p.Ref)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}
