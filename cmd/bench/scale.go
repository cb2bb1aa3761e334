package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// The scale scenarios (issue 12): N live sessions, one per user, in the private Redis, then
// authorize traffic over them with wrk, each shape against a fresh gateway with the default
// settings. Sizes grow in one Redis (10k, then 90k more for 100k, then 900k more for 1M), so
// each row's Redis memory per session is the growth of used_memory since before the first
// session, over N.

// scaleSize is one selectable size.
type scaleSize struct {
	Key string
	N   int
}

var scaleSizes = []scaleSize{{"scale-10k", 10_000}, {"scale-100k", 100_000}, {"scale-1m", 1_000_000}}

// optInKeys are scenarios "all" leaves out: they must be named (-scenarios all,scale-1m).
var optInKeys = []string{"scale-1m"}

const (
	scaleZipfS      = 1.1     // Zipf exponent of the skewed shape
	scaleUniformSet = 100_000 // the uniform shape's working set (all N below it)
	scaleRSSLimit   = 256 << 20
)

// scaleRow is one (size, shape) measurement.
type scaleRow struct {
	N     int
	Shape string // "zipf" or "uniform"
	Skip  string
	Res   wrkResult
	// Ceiling is the HTTP ceiling's req/s for this row: the mean of CeilingBefore and
	// CeilingAfter (one of them when the other failed), each measured with the row's own wrk
	// script right before its fresh gateway starts and right after its measured window, so a
	// drift of the machine's speed during the row is bracketed (a single ceiling per size,
	// minutes apart from some rows, swung 23k–31k req/s).
	Ceiling                     float64
	CeilingBefore, CeilingAfter float64
	// Hits and Misses are the gateway's session-auth cache lookups in the measured window
	// (hashgate_session_auth_cache_lookups: the memo or rueidis' cache answered / Redis read).
	Hits, Misses float64
	RT           float64 // Redis round trips per request (client counters); < 0 unknown
	Client       clientCalls
	// Gateway memory: RSS (VmRSS) when started and after the run, peak RSS (VmHWM), and Go
	// heap in use (go_memstats_heap_inuse_bytes) after the run; 0 when not read.
	RSSStart, RSSEnd, RSSPeak, HeapInuse int64
	// Redis used_memory growth per session (since before the first session) before and after
	// this row's traffic, and the server's tracking table (tracking_total_keys) after it.
	MemBefore, MemAfter float64
	Tracking            int64
	// GatewayCPU and RedisCPU are the CPU time (user + system) the gateway process and the
	// Redis server spent over the measured window, per request, in µs; < 0 when unread.
	GatewayCPU, RedisCPU float64
	Distinct             int // distinct sessions the script can send
}

func (r scaleRow) measured() bool { return r.Skip == "" && r.Res.Requests > 0 }

// HitRatio is hits over lookups in the window (-1 without lookups).
func (r scaleRow) HitRatio() float64 {
	if r.Hits+r.Misses <= 0 {
		return -1
	}
	return r.Hits / (r.Hits + r.Misses)
}

// scaleBatch is one creation step (up to N live sessions).
type scaleBatch struct {
	N, Added int
	Took     time.Duration
	Retries  int64
	How      string
	Err      string
}

func (c scaleBatch) Rate() float64 {
	if c.Took <= 0 {
		return 0
	}
	return float64(c.Added) / c.Took.Seconds()
}

// scaleState is the scale phase's sessions and Redis baseline.
type scaleState struct {
	tokens []string
	mem0   int64 // used_memory before the first scale session
}

// zipfSample draws n session indexes from Zipf(s) over 0..N-1 whose ranks are a random
// permutation of the sessions (so the hot ones are not the oldest), and returns the distinct
// indexes drawn and the draw as positions in that list.
func zipfSample(N, n int, s float64, seed int64) (distinct []int, seq []int32) {
	rng := rand.New(rand.NewSource(seed))
	z := rand.NewZipf(rng, s, 1, uint64(N-1))
	perm := rng.Perm(N)
	pos := map[int]int32{}
	seq = make([]int32, n)
	for i := range seq {
		idx := perm[z.Uint64()]
		p, ok := pos[idx]
		if !ok {
			p = int32(len(distinct))
			pos[idx] = p
			distinct = append(distinct, idx)
		}
		seq[i] = p
	}
	return distinct, seq
}

// uniformSet picks min(N, w) distinct session indexes at random.
func uniformSet(N, w int, seed int64) []int {
	perm := rand.New(rand.NewSource(seed)).Perm(N)
	return perm[:min(N, w)]
}

// scaleScripts are the two shapes' wrk scripts over tokens (len = N).
func scaleScripts(tokens []string, draws int, seed int64) (zipf, uniform wrkScript) {
	pick := func(idx []int) []string {
		out := make([]string, len(idx))
		for i, j := range idx {
			out[i] = tokens[j]
		}
		return out
	}
	d, seq := zipfSample(len(tokens), draws, scaleZipfS, seed)
	sample := func(toks []string, seq []int32) *wrkSample {
		return &wrkSample{Path: "/v1/authorize", Header: "Cookie", Prefix: sessionCookie + "=", Tokens: toks, Seq: seq, Seed: seed}
	}
	zipf = wrkScript{Method: "GET", Sample: sample(pick(d), seq)}
	uniform = wrkScript{Method: "GET", Sample: sample(pick(uniformSet(len(tokens), scaleUniformSet, seed+1)), nil)}
	return zipf, uniform
}

// createScaleSessions grows tokens to n sessions, one user each, with workers in parallel
// (each creation tried up to three times: a loaded machine may time a call out).
func createScaleSessions(ctx context.Context, create sessionCreator, tokens []string, n, workers int, retries *atomic.Int64) ([]string, error) {
	have := len(tokens)
	if n <= have {
		return tokens, nil
	}
	tokens = slices.Grow(tokens, n-have)[:n]
	err := parallel(ctx, n-have, workers, func(ctx context.Context, i int) error {
		var err error
		for attempt := range 3 {
			var tok string
			if tok, err = create(ctx, fmt.Sprintf("scale-user-%d", have+i)); err == nil {
				tokens[have+i] = tok
				return nil
			}
			if ctx.Err() != nil || attempt == 2 {
				break
			}
			retries.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		return err
	})
	if err != nil {
		return tokens[:have], err
	}
	return tokens, nil
}

// scale runs the selected scale sizes (after the other gateway phases).
func (b *bench) scale(ctx context.Context, bin string, keys []string) error {
	var sizes []scaleSize
	for _, s := range scaleSizes {
		if b.cfg.selected(s.Key) {
			sizes = append(sizes, s)
		}
	}
	if len(sizes) == 0 || ctx.Err() != nil {
		return ctx.Err()
	}
	env := append(append(baseEnv(), keys...), "REDIS_URL="+b.redis.URL(), "GATEWAY_LOG_LEVEL=warn", "GATEWAY_KEY_PREFIX="+keyPrefix)
	st := &scaleState{mem0: b.usedMemory(ctx)}
	ceil, ceilBase, err := startBaseline(ctx, "scale-ceiling-http", b.dir, "serve-ceiling")
	if err != nil {
		return err
	}
	defer ceil.stop(5 * time.Second)
	for _, sz := range sizes {
		if ctx.Err() != nil {
			break
		}
		if err := b.scaleCreate(ctx, bin, env, st, sz.N); err != nil {
			b.logf("%s: %v", sz.Key, err)
			b.scaleRows = append(b.scaleRows, scaleRow{N: sz.N, Shape: "zipf", Skip: skipReason(err)},
				scaleRow{N: sz.N, Shape: "uniform", Skip: skipReason(err)})
			break
		}
		b.waitRewrite(ctx)
		zipf, uniform := scaleScripts(st.tokens, b.cfg.scaleDraws, int64(sz.N))
		for _, sh := range []struct {
			name string
			s    wrkScript
		}{{"zipf", zipf}, {"uniform", uniform}} {
			if ctx.Err() != nil {
				break
			}
			name := sz.Key + "-" + sh.name
			before := b.scaleCeiling(ctx, name+"-ceiling-before", sh.s, ceilBase)
			r := b.scaleRun(ctx, bin, env, st, sz, sh.name, sh.s)
			after := 0.0
			if r.measured() {
				after = b.scaleCeiling(ctx, name+"-ceiling-after", sh.s, ceilBase)
			}
			r.CeilingBefore, r.CeilingAfter = before, after
			r.Ceiling = meanPositive(before, after)
			b.scaleRows = append(b.scaleRows, r)
		}
	}
	return ctx.Err()
}

// scaleCeiling measures the HTTP ceiling with script s (a 1 s warm-up at least, then the
// measured window); 0 when it fails.
func (b *bench) scaleCeiling(ctx context.Context, name string, s wrkScript, base string) float64 {
	if _, err := b.wrk.run(ctx, name+"-warmup", s, base, max(b.cfg.warmup/3, time.Second)); err != nil {
		b.logf("%s: %v", name, err)
		return 0
	}
	res, err := b.wrk.run(ctx, name, s, base, b.cfg.duration)
	if err != nil {
		b.logf("%s: %v", name, err)
		return 0
	}
	b.logf("%s: HTTP ceiling %.0f req/s", name, res.RPS())
	return res.RPS()
}

// meanPositive is the mean of the positive ones of a and b (0 when neither is).
func meanPositive(a, b float64) float64 {
	switch {
	case a > 0 && b > 0:
		return (a + b) / 2
	case a > 0:
		return a
	}
	return max(b, 0)
}

// scaleCreate grows the sessions to n: through the repository in this process (-scale-create
// repo, the default), or through POST /v1/sessions on a creation gateway (-scale-create api:
// request-rate limits off, since the admin token would be throttled to 6,000 a minute, and a
// 5 s Redis timeout), stopped before any traffic row.
func (b *bench) scaleCreate(ctx context.Context, bin string, env []string, st *scaleState, n int) error {
	if len(st.tokens) >= n {
		return nil
	}
	var create sessionCreator
	how := "sessions.Service.Create in the benchmark's process"
	if b.cfg.scaleCreate == "api" {
		gw, err := startGateway(ctx, "scale-create", bin, b.dir, append(slices.Clip(env), "GATEWAY_RATE_LIMIT_PER_TOKEN=0",
			"GATEWAY_RATE_LIMIT_PER_TENANT=0", "GATEWAY_RATE_LIMIT_PER_SESSION=0", "GATEWAY_REDIS_TIMEOUT=5s"))
		if err != nil {
			return err
		}
		defer gw.stop(20 * time.Second)
		a, err := newAPI(gw.Base, gw.Admin)
		if err != nil {
			return err
		}
		create, how = apiCreator(a), "POST /v1/sessions"
	} else {
		c, closeFn, err := repoCreator(ctx, env)
		if err != nil {
			return err
		}
		defer closeFn()
		create = c
	}
	have := len(st.tokens)
	b.logf("scale: creating sessions %d → %d (%s, %d in parallel)", have, n, how, b.cfg.scaleWorkers)
	start := time.Now()
	var retries atomic.Int64
	var err error
	st.tokens, err = createScaleSessions(ctx, create, st.tokens, n, b.cfg.scaleWorkers, &retries)
	c := scaleBatch{N: n, Added: len(st.tokens) - have, Took: time.Since(start), Retries: retries.Load(), How: how}
	if err != nil {
		c.Err = skipReason(err)
	}
	b.scaleBatches = append(b.scaleBatches, c)
	b.logf("scale: %d sessions created in %s (%.0f/s, %d retries)", c.Added, c.Took.Round(time.Millisecond), c.Rate(), c.Retries)
	return err
}

// scaleRun measures one shape against a fresh gateway with the default settings.
func (b *bench) scaleRun(ctx context.Context, bin string, env []string, st *scaleState, sz scaleSize, shape string, s wrkScript) scaleRow {
	r := scaleRow{N: sz.N, Shape: shape, RT: -1, Distinct: len(s.Sample.Tokens)}
	perSession := func() float64 {
		m := b.usedMemory(ctx)
		if m < 0 || st.mem0 < 0 {
			return -1
		}
		return float64(m-st.mem0) / float64(sz.N)
	}
	r.MemBefore = perSession()
	name := sz.Key + "-" + shape
	// HASHGATE_BENCH_PROFILE=<dir>: a CPU profile of each scale gateway over its measured
	// window, written to <dir>/<row>.pprof (the gateway serves pprof on a loopback port of its
	// own; nothing else changes).
	profDir := os.Getenv("HASHGATE_BENCH_PROFILE")
	if profDir != "" {
		env = append(slices.Clone(env), "GATEWAY_PPROF_ADDR="+benchPprofAddr)
	}
	gw, err := startGateway(ctx, name, bin, b.dir, env)
	if err != nil {
		r.Skip = skipReason(err)
		return r
	}
	defer gw.stop(20 * time.Second)
	pid := gw.cmd.Process.Pid
	r.RSSStart, _ = procStatus(pid)
	if err := probe(ctx, gw.Base, s, []int{200}); err != nil {
		r.Skip = skipReason(err)
		return r
	}
	b.logf("%s: fresh gateway, %d distinct sessions in the script, warm-up %s, run %s", name, r.Distinct, b.cfg.warmup, b.cfg.duration)
	if b.cfg.warmup > 0 {
		if _, err := b.wrk.run(ctx, name+"-warmup", s, gw.Base, b.cfg.warmup); err != nil {
			r.Skip = skipReason(err)
			return r
		}
	}
	settle()
	g0, err := scrapeGauges(ctx, gw.Ops+"/metrics")
	if err != nil {
		r.Skip = skipReason(err)
		return r
	}
	var profiled chan struct{}
	if profDir != "" {
		profiled = make(chan struct{})
		go func() {
			defer close(profiled)
			if err := cpuProfile(ctx, filepath.Join(profDir, name+".pprof"), b.cfg.duration-time.Second); err != nil {
				b.logf("%s: profile: %v", name, err)
			}
		}()
	}
	gc0, rc0 := procCPU(pid), b.redisCPU(ctx)
	res, err := b.wrk.run(ctx, name, s, gw.Base, b.cfg.duration)
	gc1, rc1 := procCPU(pid), b.redisCPU(ctx)
	if profiled != nil {
		<-profiled
	}
	if err != nil {
		r.Skip = skipReason(err)
		return r
	}
	r.GatewayCPU, r.RedisCPU = perRequestMicros(gc0, gc1, res.Requests), perRequestMicros(rc0, rc1, res.Requests)
	settle()
	r.Res = res
	r.RSSEnd, r.RSSPeak = procStatus(pid)
	if g1, err := scrapeGauges(ctx, gw.Ops+"/metrics"); err == nil {
		r.Hits, r.Misses, r.HeapInuse = g1.Hits-g0.Hits, g1.Misses-g0.Misses, int64(g1.HeapInuse)
		if g0.CallsOK && g1.CallsOK && res.Requests > 0 {
			r.Client = g1.Calls.sub(g0.Calls)
			r.RT = r.Client.RoundTrips() / float64(res.Requests)
		}
	}
	r.MemAfter = perSession()
	r.Tracking, _ = strconv.ParseInt(infoField(ctx, b.redis.Client, "stats", "tracking_total_keys"), 10, 64)
	share, other := row{Res: res, Expect: []int{200}}.okShare()
	b.logf("%s: %.0f req/s, p99 %s ms, hits %.1f%%, RSS %s (peak %s), heap %s, %.1f%% expected %s", name, res.RPS(), ms(res.P99),
		100*r.HitRatio(), mib(r.RSSEnd), mib(r.RSSPeak), mib(r.HeapInuse), 100*share, other)
	return r
}

func mib(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
