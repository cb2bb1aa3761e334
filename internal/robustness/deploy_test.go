package robustness

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// deployment is a Redis primary with one replica and the gateways' way to it. The replica
// replicates through link (a testredis.Proxy that can partition the replication link); the
// gateways connect through fronts, proxies that play the floating address a failover moves to
// the promoted replica (one per gateway replica, so a partition can cut some of them off
// the primary). A Sentinel deployment (sentinel_test.go) has sentinels instead of link and
// fronts.
type deployment struct {
	t                *testing.T
	primary, replica *testredis.Server
	link             *testredis.Proxy
	fronts           []*testredis.Proxy
	sentinels        *sentinels
	// gateways are the replicas serving the workload, which a fault may kill; gwFronts[i] is
	// the front gateways[i] reaches Redis through (standalone).
	gateways []*gateway
	// limited are the rate-limited tenant's replicas (ratelimit_test.go).
	limited  []*gateway
	gwFronts []*testredis.Proxy
	// clock: the first gateway's clock, which the gateway fault steps.
	clock *steppedClock
	// cluster (cluster_test.go): its masters' addresses now, the masters crashed, and the
	// workload's key prefix (the migration picks a quote's slot).
	cluster *testredis.ReplicatedCluster
	masters []string
	crashed map[int]bool
	prefix  string
	// admin: the workload's admin bearer (the probes of a frozen primary send it).
	admin string
}

// redisArgs are the servers' settings: a fast replication handshake and a primary that notices
// a lost replica within a second or two.
// DEBUG is enabled from loopback for the stall fault (DEBUG SLEEP).
var redisArgs = []string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1", "--repl-timeout", "2",
	"--enable-debug-command", "local"}

// startDeployment starts the primary and its replica (both with extra, which a replica applies
// once promoted; the link holding every byte for delay) and waits until the replica is in
// sync. It skips the test when the Redis 8 executables are not provided, and fails it under
// CI=true.
func startDeployment(t *testing.T, delay time.Duration, extra ...string) *deployment {
	t.Helper()
	testredisUnset(t)
	d := &deployment{t: t}
	args := append(append([]string(nil), redisArgs...), extra...)
	d.primary = testredis.StartServer(t, args...)
	d.link = testredis.StartProxy(t, d.primary.Addr(), delay)
	d.replica = testredis.StartServer(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(d.link.Port)}, args...)...)
	d.waitInSync()
	return d
}

// testredisUnset fails the test under CI=true when the Redis 8 executables are not provided
// (testredis skips it otherwise); it reports whether they are not.
func testredisUnset(t *testing.T) bool {
	t.Helper()
	unset := os.Getenv(testredis.EnvRedis8Server) == ""
	if unset && os.Getenv("CI") == "true" {
		t.Fatalf("%s is unset under CI=true: the robustness checks must run", testredis.EnvRedis8Server)
	}
	return unset
}

// primaries are the addresses of the masters now (one, but for a cluster).
func (d *deployment) primaries() []string {
	if d.cluster != nil {
		return d.masters
	}
	return []string{d.primary.Addr()}
}

// url is a REDIS_URL for gateways: a floating address of their own (a new front), or the
// Sentinels.
func (d *deployment) url() string {
	if d.sentinels != nil {
		return d.sentinels.url()
	}
	if d.cluster != nil {
		return d.cluster.URL()
	}
	front := testredis.StartProxy(d.t, d.primary.Addr(), 0)
	d.fronts = append(d.fronts, front)
	return fmt.Sprintf("redis://127.0.0.1:%d", front.Port)
}

// specs is spec for n gateway replicas, each with a way to Redis of its own: its own front
// (standalone), or its own loopback source address (Sentinel, cluster: gatewayIP).
func (d *deployment) specs(spec gatewaySpec, n int) []gatewaySpec {
	out := make([]gatewaySpec, n)
	for i := range out {
		out[i] = spec.with("REDIS_URL", d.url())
		if d.sentinels != nil || d.cluster != nil {
			out[i].source = gatewayIP(i)
		} else {
			d.gwFronts = append(d.gwFronts, d.fronts[len(d.fronts)-1])
		}
	}
	return out
}

// waitInSync waits until the replica's link is up and it holds every write made so far on the
// primary (WAIT from a connection that just wrote there).
func (d *deployment) waitInSync() {
	d.t.Helper()
	if d.cluster != nil {
		if err := d.clusterInSync(); err != nil {
			d.t.Fatal(err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testredis.WaitLinkUp(ctx, d.replica.Port); err != nil {
		d.t.Fatal(err)
	}
	c := testredis.NodeClient(d.t, d.primary.Addr())
	err := c.Dedicated(func(dc rueidis.DedicatedClient) error {
		if err := dc.Do(ctx, dc.B().Set().Key("robustness:sync").Value("1").Px(time.Second).Build()).Error(); err != nil {
			return err
		}
		n, err := dc.Do(ctx, dc.B().Wait().Numreplicas(1).Timeout(20000).Build()).AsInt64()
		if err == nil && n < 1 {
			err = fmt.Errorf("no replica acknowledged")
		}
		return err
	})
	if err != nil {
		d.t.Fatalf("replica in sync: %v", err)
	}
}

// partition cuts the replication link (testredis.Proxy.Partition) and waits until the primary
// lists no replica online.
func (d *deployment) partition() error {
	d.link.Partition()
	return d.waitNoReplica()
}

// failover kills the primary (SIGKILL) with whatever the link still holds, promotes the
// replica (REPLICAOF NO ONE), moves the floating address to it and resets the gateways'
// connections, as an operator's failover script or a cloud's managed failover does.
func (d *deployment) failover() error {
	d.primary.Stop()
	d.link.Cut()
	if err := testredis.Do(testredis.NodeClient(d.t, d.replica.Addr()), "REPLICAOF", "NO", "ONE").Error(); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	for _, f := range d.fronts {
		f.Retarget(d.replica.Addr())
		f.Cut()
	}
	return nil
}

// rejoin restarts the crashed primary (from its append-only file) as a replica of the promoted
// one through the link, heals the partition and swaps the roles, so the next cycle starts from
// a primary with a replica again.
func (d *deployment) rejoin() error {
	d.link.Heal()
	d.link.Retarget(d.replica.Addr())
	d.primary.Start()
	c := testredis.NodeClient(d.t, d.primary.Addr())
	var err error
	// Asked again while the restarted server still loads its append-only file.
	if perr := poll(30*time.Second, "the crashed primary rejoins", func() bool {
		err = testredis.Do(c, "REPLICAOF", "127.0.0.1", strconv.Itoa(d.link.Port)).Error()
		return err == nil
	}); perr != nil {
		return fmt.Errorf("rejoin: %w (%w)", perr, err)
	}
	d.primary, d.replica = d.replica, d.primary
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return testredis.WaitLinkUp(ctx, d.replica.Port)
}

// poll calls cond every few milliseconds until it returns true, or fails with what.
func poll(within time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
