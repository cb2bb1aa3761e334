package robustness

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// A fault is a schedule run in cycles over a deployment while the workload runs. Each cycle
// ends with the deployment whole again (the crashed primary rejoined as a replica), so a long
// run repeats it.
type fault struct {
	name  string
	cycle func(ctx context.Context, d *deployment, period time.Duration, n *faultCounts) error
}

// faultCounts is what a run injected, and when (Spans: from each injection to the deployment
// whole again, which the rate-limits model reads as disturbed windows).
type faultCounts struct {
	Partitions, Failovers, Stalls, Kills int
	// GatewayCuts: gateway replicas cut off from the primary (the others not); Restarts: killed
	// gateway processes started again; ClockSteps: steps of a gateway's clock.
	GatewayCuts, Restarts, ClockSteps int
	Migrations                        int // slots migrated (cluster)
	// Rejoins: crashed cluster masters restarted, back as their replacement's replica.
	Rejoins int
	// Pauses: Redis primaries frozen by SIGSTOP; GatewayPauses: gateway processes frozen;
	// Probes: the requests sent while a primary was frozen (pause_test.go).
	Pauses, GatewayPauses int
	Probes                probeCounts
	// Reverted: splits after which the Sentinels settled on the primary the majority's failover
	// had replaced (the promoted one made its replica again).
	Reverted int
	Spans    [][2]time.Time
	// Cuts: from each partition to the failover that ends it, the time a primary cut off from
	// its replica may hold a write it applied without confirming it (one in flight at the
	// cut, whose WAIT then times out: a 503), which readers see and the failover undoes.
	Cuts [][2]time.Time
}

// span opens a span now; the function it returns closes it.
func (n *faultCounts) span() func() {
	i := len(n.Spans)
	n.Spans = append(n.Spans, [2]time.Time{time.Now(), time.Now()})
	return func() { n.Spans[i][1] = time.Now() }
}

func (n faultCounts) String() string {
	s := fmt.Sprintf("%d partitions, %d failovers", n.Partitions, n.Failovers)
	if n.Stalls+n.Kills > 0 {
		s += fmt.Sprintf(", %d stalls, %d gateway kills", n.Stalls, n.Kills)
	}
	if n.Reverted > 0 {
		s += fmt.Sprintf(", %d failovers undone", n.Reverted)
	}
	if n.Migrations > 0 {
		s += fmt.Sprintf(", %d slot migrations", n.Migrations)
	}
	if n.Pauses+n.GatewayPauses > 0 {
		s += fmt.Sprintf(", %d Redis SIGSTOPs, %d gateway SIGSTOPs", n.Pauses, n.GatewayPauses)
	}
	if n.Rejoins > 0 {
		s += fmt.Sprintf(", %d crashed masters rejoined", n.Rejoins)
	}
	if n.GatewayCuts+n.Restarts+n.ClockSteps > 0 {
		s += fmt.Sprintf(", %d gateway↔primary cuts, %d gateway restarts, %d clock steps", n.GatewayCuts, n.Restarts, n.ClockSteps)
	}
	return s
}

var faults = map[string]fault{
	// crash: the primary is killed (SIGKILL) a quarter into the cycle, the replica promoted and
	// the gateways moved to it; the old primary rejoins as a replica at three quarters.
	"crash": {name: "crash", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/4) {
			return nil
		}
		defer n.span()()
		if err := d.failover(); err != nil {
			return err
		}
		n.Failovers++
		if !sleep(ctx, p/2) {
			return nil
		}
		return d.rejoin()
	}},
	// partition: the replication link is cut a fifth into the cycle; the primary keeps taking
	// writes from the gateways; at 45% it is killed and the cut-off replica promoted (what an
	// automatic failover does when the primary is unreachable); the old primary rejoins at 75%.
	"partition": {name: "partition", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{time.Now(), time.Now().Add(p)})
		if err := d.partition(); err != nil {
			return err
		}
		n.Partitions++
		if !sleep(ctx, p/4) {
			return nil
		}
		if err := d.failover(); err != nil {
			return err
		}
		n.Cuts[cut][1] = time.Now()
		n.Failovers++
		if !sleep(ctx, 3*p/10) {
			return nil
		}
		return d.rejoin()
	}},
	// stall: a fifth into the cycle the primary stops answering for stallFor(p) (DEBUG SLEEP:
	// requests in flight time out after GATEWAY_REDIS_TIMEOUT and answer 503); no failover, no
	// data lost. Three fifths in, in the first cycle, a gateway replica is killed abruptly
	// (gateway.kill: in process, its listener, connections and store closed without draining).
	"stall": {name: "stall", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		end := n.span()
		err := d.stall(stallFor(p))
		end()
		if err != nil {
			return err
		}
		n.Stalls++
		if !sleep(ctx, 2*p/5-stallFor(p)) {
			return nil
		}
		if live := d.liveGateways(); n.Kills == 0 && len(live) > 1 {
			live[len(live)-1].kill()
			n.Kills++
		}
		return nil
	}},
	// gateway: the gateways' own faults, Redis whole. A fifth into the cycle the first
	// replica's clock steps 10 minutes ahead and the second replica is cut off from the
	// primary (its front blocked: its connections reset, new ones refused) while the others
	// are not, for a fifth of the cycle; three fifths in, the clock steps back 10 minutes (to
	// the true time) and the last replica, a cmd/gateway process, is killed with SIGKILL (requests in
	// flight get no answer, recorded as unknown) and started again on its port four fifths in.
	// No failover: nothing may be lost and no model may show a violation.
	"gateway": {name: "gateway", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		d.clock.step(clockStep)
		n.ClockSteps++
		end := n.span()
		cut := d.gwFronts[1]
		cut.Block()
		n.GatewayCuts++
		ok := sleep(ctx, p/5)
		cut.Heal()
		end()
		if !ok || !sleep(ctx, p/5) {
			return nil
		}
		if d.clock.step(-clockStep); *flagBehind {
			d.clock.step(-clockStep)
		}
		n.ClockSteps++
		g := d.gateways[len(d.gateways)-1]
		end = n.span()
		defer end()
		g.kill()
		n.Kills++
		if !sleep(ctx, p/5) {
			return nil
		}
		n.Restarts++
		return g.restart(context.Background())
	}},
}

// clockStep is how far the gateway fault steps a replica's clock, ahead then back: well within
// the workload's tokens' hour of life, so no token expires on the stepped replica alone. (A
// replica running behind the true time by more than the JWT leeway, 30 s, refuses every bearer
// minted since: nbf and iat are in its future. docs/ROBUSTNESS.md, "Clock steps".)
const clockStep = 10 * time.Minute

// stallFor is how long a stall lasts in a cycle of p: longer than GATEWAY_REDIS_TIMEOUT (1s)
// in the long run's cycles, and shorter than the replicas' repl-timeout (2s), so the replica
// keeps its link.
func stallFor(p time.Duration) time.Duration {
	return min(max(p/8, 500*time.Millisecond), 1800*time.Millisecond)
}

// stall blocks the primary for d (DEBUG SLEEP; the servers run with --enable-debug-command
// local).
func (d *deployment) stall(dur time.Duration) error {
	c := testredis.NodeClient(d.t, d.primary.Addr())
	start := time.Now()
	if err := testredis.Do(c, "DEBUG", "SLEEP", strconv.FormatFloat(dur.Seconds(), 'f', 3, 64)).Error(); err != nil {
		return fmt.Errorf("stall: %w", err)
	}
	if took := time.Since(start); took < dur {
		return fmt.Errorf("stall: DEBUG SLEEP answered after %v, not %v", took, dur)
	}
	return nil
}

// liveGateways are the replicas not killed.
func (d *deployment) liveGateways() []*gateway {
	var out []*gateway
	for _, g := range d.gateways {
		if !g.dead.Load() {
			out = append(out, g)
		}
	}
	return out
}

// sleep waits for d or the end of ctx; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
