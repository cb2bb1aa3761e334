package robustness

import (
	"context"
	"time"
)

// A fault is a schedule run in cycles over a deployment while the workload runs. Each cycle
// ends with the deployment whole again (the crashed primary rejoined as a replica), so a long
// run repeats it.
type fault struct {
	name  string
	cycle func(ctx context.Context, d *deployment, period time.Duration, n *faultCounts) error
}

// faultCounts is what a run injected.
type faultCounts struct{ Partitions, Failovers int }

var faults = map[string]fault{
	// crash: the primary is killed (SIGKILL) a quarter into the cycle, the replica promoted and
	// the gateways moved to it; the old primary rejoins as a replica at three quarters.
	"crash": {name: "crash", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/4) {
			return nil
		}
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
		n.Failovers++
		if !sleep(ctx, 3*p/10) {
			return nil
		}
		return d.rejoin()
	}},
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
