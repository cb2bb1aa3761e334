package robustness

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Flags of the long run (`make robustness`); the defaults are the short run of the normal
// suite.
var (
	flagDuration = flag.Duration("robustness.duration", 9*time.Second, "how long each run's workload lasts")
	flagPeriod   = flag.Duration("robustness.period", 0, "one fault cycle (0: the whole duration, one cycle)")
	flagSeed     = flag.Uint64("robustness.seed", 0, "the workload's seed (0: a random one, logged)")
	flagDir      = flag.String("robustness.dir", "", "where histories, visualizations and the summary go (default: the test's temporary folder)")
	flagGateways = flag.Int("robustness.gateways", 2, "gateway replicas per run")
	flagClients  = flag.Int("robustness.clients", 8, "concurrent clients per run")
	flagPace     = flag.Duration("robustness.pace", 0, "each client's pause between two operations (bounds a long run's history)")
	flagFirstID  = flag.Bool("robustness.revoke-first-id", true, "revoke and rotate sessions by the id their create returned (false: by the latest id a rotation answered)")
	flagBehind   = flag.Bool("robustness.clock-behind", false, "the gateway fault steps the clock back to 10 minutes behind the true time, not to it (its replica then refuses fresh bearers: 401)")
	flagAll      = flag.Bool("robustness.all", false, "run every schedule (make robustness); without it the short run leaves out the ones marked long")
	flagSettings = flag.Bool("robustness.settings", false, "run the durability settings' matrix too (each loss scenario with durability off, WAIT alone, the defaults and min-replicas-to-write alone: docs/ROBUSTNESS.md)")
	flagStable   = flag.Bool("robustness.stable-ids", true, "check sessions against the brief's contract: a session keeps its id across rotations (false: any id names it only until a rotation answers another)")
)

// runCase is one run: a fault schedule with a GATEWAY_DURABLE_REPLICAS setting. A control
// runs a setting known to be unsafe and must show a violation.
type runCase struct {
	fault, durable string
	control        bool
	// redis: the servers' extra settings.
	redis []string
	// sentinel: the gateways find the primary through three Sentinels (sentinel_test.go), which
	// fail over on their own.
	sentinel bool
	// processes: how many of the workload's replicas are cmd/gateway processes (at least one
	// more runs in process: setup mints its bearer there).
	processes int
	// cluster: a three-master cluster with a replica each (cluster_test.go).
	cluster bool
	// long: only with -robustness.all (make robustness), so the short run in make test stays
	// within its time.
	long bool
	// env: the gateways' settings beyond GATEWAY_DURABLE_REPLICAS (GATEWAY_DURABLE_AOF=off).
	env map[string]string
	// linkDelay: what the replication link holds each byte for (standalone).
	linkDelay time.Duration
	// anyLoss: a control that must show an acknowledged write lost in some model, a
	// credential or an object, not in both kinds (the zombie's window is the requests queued
	// on the frozen gateway; a cut-off cluster master takes writes for cluster-node-timeout
	// only, for one shard's keys: too few for both in a short run).
	anyLoss bool
	// settings: a run of the durability settings' matrix (-robustness.settings); unsafe: its
	// setting is not expected to keep acknowledged writes, so its losses are measured, not
	// asserted (nor required, as a control's are).
	settings, unsafe bool
}

// minReplicas makes a primary refuse every write while no replica is connected and has
// acknowledged within the last second (NOREPLICAS, which the gateway answers 503).
var minReplicas = []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"}

// The credential models must show no violation with the default durability; the control
// (durability off, writes acknowledged during the partition then lost on the failover) must
// show one, or the checker could not see a loss. At most one object per Idempotency-Key and
// the rate limit's bound hold in every run. The object models (quote drafts, cases, keyed
// creates, automatic escalation exactly once) must show no violation where no failover loses
// writes (the stall run), and no acknowledged write lost (result.Lost) in any run but the
// control, which must show one: their writes are confirmed by WAIT as the credentials' are.
// What remains with a failover is a write the cut-off primary applied and could not confirm
// (503), read before the failover undid it (docs/ROBUSTNESS.md, finding 5): reported, not
// asserted.
func TestRobustness(t *testing.T) {
	t.Parallel()
	seed, dir := runSeedAndDir(t)
	t.Logf("seed %d; histories in %s", seed, dir)
	cases := map[string]runCase{
		"crash/durable=auto":              {fault: "crash", durable: "auto"},
		"partition/durable=auto":          {fault: "partition", durable: "auto"},
		"partition/durable=0":             {fault: "partition", durable: "0", control: true},
		"partition/min-replicas-to-write": {fault: "partition", durable: "auto", redis: minReplicas},
		"stall/durable=auto":              {fault: "stall", durable: "auto"},
		"gateway/durable=auto":            {fault: "gateway", durable: "auto", processes: 2},
		"sentinel-crash/durable=auto":     {fault: "sentinel-crash", durable: "auto", sentinel: true, long: true},
		"sentinel-partition/durable=auto": {fault: "sentinel-partition", durable: "auto", sentinel: true, long: true},
		"sentinel-split/durable=auto":     {fault: "sentinel-split", durable: "auto", sentinel: true},
		"sentinel-split/durable=0":        {fault: "sentinel-split", durable: "0", sentinel: true, control: true, long: true},
		"cluster/durable=auto":            {fault: "cluster", durable: "auto", cluster: true, long: true},
		"cluster-partition/durable=auto":  {fault: "cluster-partition", durable: "auto", cluster: true, long: true},
		"cluster-partition/durable=0":     {fault: "cluster-partition", durable: "0", cluster: true, control: true, anyLoss: true, long: true},
		"cluster-zombie/durable=auto":     {fault: "cluster-zombie", durable: "auto", cluster: true, processes: 1, long: true},
		"cluster-zombie/durable=0":        {fault: "cluster-zombie", durable: "0", cluster: true, processes: 1, unsafe: true, long: true},
		"sigstop/durable=auto":            {fault: "sigstop", durable: "auto", processes: 1},
		"sentinel-zombie/durable=auto":    {fault: "sentinel-zombie", durable: "auto", sentinel: true, processes: 1, long: true},
		"sentinel-zombie/durable=0":       {fault: "sentinel-zombie", durable: "0", sentinel: true, processes: 1, control: true, anyLoss: true, long: true},
	}
	for name, rc := range settingsMatrix() {
		if _, ok := cases[name]; !ok {
			cases[name] = rc
		}
	}
	if os.Getenv(testredis.EnvRedis8Server) != "" {
		gatewayBin = buildGateway(t, t.TempDir())
	}
	var (
		mu          sync.Mutex
		rows, notes []string
	)
	t.Cleanup(func() {
		if len(rows) > 0 {
			out := strings.Join(rows, "\n") + "\n\n" + strings.Join(notes, "\n") + "\n"
			_ = os.WriteFile(filepath.Join(dir, "summary.md"), []byte(out), 0o644)
		}
	})
	t.Run("ratelimits/prefix-per-replica", func(t *testing.T) {
		t.Parallel()
		r := rateControl(t, min(*flagDuration, 5*time.Second))
		r.Seed = seed
		t.Logf("%s", r.row())
		for _, n := range r.Notes {
			t.Logf("%s", n)
		}
		mu.Lock()
		rows = append(rows, r.row())
		notes = append(notes, "- "+r.Run+": "+strings.Join(r.Notes, "; "))
		mu.Unlock()
		if r.Violations == 0 {
			t.Errorf("control: with a key prefix per replica the checker found no window over the limit; it cannot see an overshoot")
		}
	})
	for name, rc := range cases {
		t.Run(name, func(t *testing.T) {
			if rc.long && !*flagAll {
				t.Skip("a long schedule: make robustness, or -robustness.all")
			}
			if rc.settings && !*flagSettings {
				t.Skip("a run of the durability settings' matrix: -robustness.settings")
			}
			t.Parallel()
			results := runOnce(t, name, rc, seed, dir)
			credential, lost := 0, 0
			for _, r := range results {
				t.Logf("%s", r.row())
				mu.Lock()
				rows = append(rows, r.row())
				for _, n := range r.Notes {
					notes = append(notes, "- "+r.Run+" "+r.Model+": "+n)
				}
				mu.Unlock()
				for _, n := range r.Notes {
					t.Logf("%s: %s", r.Model, n)
				}
				if r.Visualization != "" {
					t.Logf("%s: %d violating objects, visualized in %s", r.Model, r.Violations, r.Visualization)
				}
				switch r.Model {
				case "sessions", "tokens", "evictions": // the credential models
					credential += r.Violations
				case "creates-objects", perTenant.model, perToken.model, perSession.model:
					if r.Violations != 0 {
						t.Errorf("%s: %d violations (seed %d)", r.Model, r.Violations, seed)
					}
				default:
					lost += r.Lost
					switch {
					case !rc.failsOver() && r.Violations != 0:
						t.Errorf("%s: %d violations with no failover (seed %d; see the visualization)", r.Model, r.Violations, seed)
					case !rc.control && !rc.unsafe && r.Lost != 0:
						t.Errorf("%s: %d objects lost an acknowledged write (seed %d; see the visualization)", r.Model, r.Lost, seed)
					}
				}
			}
			if pr := results[0].Faults.Probes; rc.fault == "sigstop" {
				t.Logf("probes while the primary was frozen: %d sent, %d answered 503 + Retry-After within %v, the slowest in %v",
					pr.Sent, pr.Refused, refusalBound, pr.Slowest.Round(time.Millisecond))
				if pr.Sent == 0 || pr.Refused != pr.Sent {
					t.Errorf("a frozen primary: %d of %d probes answered 503 + Retry-After within %v; others: %v", pr.Refused, pr.Sent, refusalBound, pr.Bad)
				}
			}
			switch {
			case rc.control && rc.anyLoss:
				if credential+lost == 0 {
					t.Errorf("control: with GATEWAY_DURABLE_REPLICAS=0 no model lost an acknowledged write; the checker cannot see it")
				}
			case rc.control && credential == 0:
				t.Errorf("control: with GATEWAY_DURABLE_REPLICAS=0 the checker found no violation; it cannot see a loss")
			case rc.control && lost == 0:
				t.Errorf("control: with GATEWAY_DURABLE_REPLICAS=0 no quote, case or keyed create lost an acknowledged write; the checker cannot see it")
			case !rc.control && !rc.unsafe && credential != 0:
				t.Errorf("%d session, eviction or token histories are not linearizable (seed %d; see the visualization)", credential, seed)
			}
		})
	}
}

// runSeedAndDir is a run's seed (-robustness.seed, else a random one) and where its histories
// go (-robustness.dir, else the test's temporary folder).
func runSeedAndDir(t *testing.T) (uint64, string) {
	seed := *flagSeed
	if seed == 0 {
		seed = rand.Uint64() >> 1
	}
	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return seed, dir
}

// failsOver reports whether the run's schedule promotes a replica (and so may lose the writes
// WAIT does not confirm).
func (rc runCase) failsOver() bool {
	return rc.fault != "stall" && rc.fault != "gateway" && rc.fault != "sigstop"
}

// gatewayBin is the built cmd/gateway the process replicas run.
var gatewayBin string

// historyModels are the models checked over recorded histories, by name.
var historyModels = []struct {
	name  string
	model func() porcupine.Model
}{
	{"sessions", func() porcupine.Model { return newSessionModel(*flagStable) }},
	{"tokens", func() porcupine.Model { return tokenModel }},
	{"quotes", func() porcupine.Model { return quoteModel }},
	{"cases", caseModel.ToModel},
	{"creates", func() porcupine.Model { return idemModel }},
	{"evictions", evictModel.ToModel},
}

// runOnce starts a deployment, the workload's replicas and the limited tenant's, runs both
// workloads under the fault schedule and checks every model.
func runOnce(t *testing.T, name string, rc runCase, seed uint64, dir string) []result {
	var d *deployment
	switch {
	case rc.sentinel:
		d = startSentinelDeployment(t, rc.redis...)
	case rc.cluster:
		d = startClusterDeployment(t, rc.fault != "cluster")
	default:
		d = startDeployment(t, rc.linkDelay, rc.redis...)
	}
	spec := gatewayConfig(t, "", rc.durable)
	for k, v := range rc.env {
		spec = spec.with(k, v)
	}
	d.prefix = spec.env["GATEWAY_KEY_PREFIX"]
	replicas := *flagGateways
	if rc.processes > 0 {
		replicas = max(replicas, rc.processes+1)
	}
	specs := d.specs(spec, replicas)
	if rc.fault == "gateway" {
		d.clock = &steppedClock{}
		specs[0].clock = d.clock
	}
	gws := startGateways(t, specs[:replicas-rc.processes]...)
	gws = append(gws, startProcesses(t, gatewayBin, specs[replicas-rc.processes:]...)...)
	d.gateways = gws
	lim := startLimited(t, d.url(), rc.durable, *flagGateways)
	d.limited = lim.gws
	w := setup(t, gws, spec.env["GATEWAY_KEY_PREFIX"], *flagDuration)
	d.admin = w.admin
	d.waitInSync() // the setup's creations are not what is checked
	w.start = time.Now()
	for _, m := range historyModels {
		w.h[m.name] = newHistory(w.start)
	}
	period := *flagPeriod
	if period <= 0 {
		period = *flagDuration
	}
	ctx, cancel := context.WithTimeout(context.Background(), *flagDuration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		w.run(ctx, *flagClients, seed, *flagPace)
	}()
	go func() {
		defer wg.Done()
		lim.run(ctx)
	}()
	var n faultCounts
	f := faults[rc.fault]
	for range max(1, int(*flagDuration/period)) {
		if err := f.cycle(ctx, d, period, &n); err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("%s: %v", rc.fault, err)
		}
	}
	wg.Wait()
	var out []result
	base := result{Run: name, Fault: rc.fault, Durable: rc.durable, Seed: seed, Faults: n}
	for _, m := range historyModels {
		r, err := check(m.model(), m.name, w.h[m.name], dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if m.name == "evictions" && len(n.Cuts) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%d users refused with one copy through the cuts (the split brains of unconfirmed creates the second copy explains)", oneCopyViolations(w.h[m.name])))
		}
		if r.Ops < 20 {
			t.Errorf("%s: only %d operations recorded; the workload did not run", m.name, r.Ops)
		}
		out = append(out, r)
	}
	r, err := w.watchAuto(base)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, r)
	var nodes []rueidis.Client
	for _, addr := range d.primaries() {
		nodes = append(nodes, testredis.NodeClient(t, addr))
	}
	if r, err = w.objectsPerKey(base, nodes...); err != nil {
		t.Fatal(err)
	}
	return append(append(out, r), lim.check(base, n.Spans)...)
}
