package robustness

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// A cluster deployment: three masters, each with a replica (testredis.StartReplicatedCluster;
// the masters announce proxies, which a crash cuts), the gateways given the seed list. Its
// fault migrates the slot holding the quote drafts (the tenant's tag) between two masters
// while the workload runs (MIGRATE in about a dozen batches, a pause after each, so requests
// meet the slot MIGRATING and IMPORTING and get ASK redirections), then crashes the master
// that received it and promotes its replica (CLUSTER FAILOVER FORCE, as the failover suite
// does: the cluster's own detection takes cluster-node-timeout more), then restarts the killed
// node, which rejoins as the promoted master's replica; a long run repeats the cycle.

// startClusterDeployment starts the cluster and waits until every replica holds its master's
// writes.
// A partitionable one (cluster_split_test.go) has every node behind proxies of its own.
func startClusterDeployment(t *testing.T, partitionable bool) *deployment {
	t.Helper()
	testredisUnset(t) // StartReplicatedCluster skips
	start := func(t testing.TB) *testredis.ReplicatedCluster { return testredis.StartReplicatedCluster(t, 0) }
	if partitionable {
		start = testredis.StartPartitionableCluster
	}
	d := &deployment{t: t, cluster: start(t), crashed: map[int]bool{}}
	for _, n := range d.cluster.Nodes {
		d.masters = append(d.masters, n.Addr())
	}
	d.waitInSync()
	return d
}

// clusterInSync waits until each live master's replica has replicated up to the offset the
// master had when asked.
func (d *deployment) clusterInSync() error {
	rc := d.cluster
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range rc.Nodes {
		if d.crashed[i] {
			continue
		}
		info, err := rc.Do(ctx, i, "INFO", "replication").ToString()
		if err != nil {
			return err
		}
		want := infoInt(info, "master_repl_offset")
		if err := poll(30*time.Second, fmt.Sprintf("master %d's replica in sync", i), func() bool {
			info, err := rc.Replicas[i].Do(ctx, "INFO", "replication").ToString()
			return err == nil && strings.Contains(info, "master_link_status:up") && infoInt(info, "slave_repl_offset") >= want
		}); err != nil {
			return err
		}
	}
	return nil
}

// infoInt is the integer field name of an INFO reply (-1 when absent).
func infoInt(info, name string) int64 {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// migrateQuoteSlot moves the slot of a quote draft (the tenant's drafts share its tag) from
// the master holding it to the next one, in about migrationBatches batches with a pause after
// each, and returns the master it moved to and a key of the slot.
func (d *deployment) migrateQuoteSlot(ctx context.Context) (int, string, error) {
	rc := d.cluster
	from, key, err := d.quoteShard(ctx)
	if err != nil {
		return 0, "", err
	}
	slot, err := rc.KeySlot(ctx, key)
	if err != nil {
		return 0, "", err
	}
	n, err := rc.CountKeysInSlot(ctx, from, slot)
	if err != nil {
		return 0, "", err
	}
	to := (from + 1) % len(rc.Nodes)
	start := time.Now()
	moved, err := rc.Migrate(ctx, testredis.Migration{Slot: slot, From: from, To: to, Batch: max(1, int(n)/migrationBatches),
		After: func(int) { time.Sleep(300 * time.Millisecond) }})
	d.t.Logf("slot %d (%s): %d keys moved from master %d to master %d in %v", slot, key, moved, from, to, time.Since(start).Round(time.Millisecond))
	if err != nil {
		err = fmt.Errorf("%w; keys of the slot on both masters: %v", err, d.keysOnBoth(slot, from, to))
	}
	return to, key, err
}

// quoteShard is the shard whose master holds the quote drafts (the tenant's slot), and a
// key of them.
func (d *deployment) quoteShard(ctx context.Context) (int, string, error) {
	for i := range d.cluster.Nodes {
		keys, err := d.cluster.Do(ctx, i, "KEYS", d.prefix+":v1:quote:*").AsStrSlice()
		if err != nil {
			return 0, "", err
		}
		if len(keys) > 0 {
			return i, keys[0], nil
		}
	}
	return 0, "", fmt.Errorf("no quote draft on any master")
}

// keysOnBoth lists the keys of slot that masters a and b both hold (a MIGRATE refused with
// BUSYKEY names none).
func (d *deployment) keysOnBoth(slot, a, b int) []string {
	ctx := context.Background()
	var keys [2][]string
	for j, i := range []int{a, b} {
		keys[j], _ = d.cluster.Do(ctx, i, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), "100000").AsStrSlice()
	}
	var both []string
	for _, k := range keys[0] {
		if slices.Contains(keys[1], k) {
			both = append(both, k)
		}
	}
	return both
}

// migrationBatches is about how many MIGRATE batches move a slot (300 ms apart).
const migrationBatches = 12

// crashMaster kills shard i's master, cuts its proxy (a node first started as a replica has
// none: the kill resets its connections) and promotes its replica.
func (d *deployment) crashMaster(i int) error {
	rc := d.cluster
	m := rc.Nodes[i]
	m.Kill()
	if l := rc.Link(m); l != nil {
		l.Cut()
	}
	d.crashed[i] = true
	r := rc.Replicas[i]
	var asked time.Time
	err := poll(30*time.Second, "the replica promoted", func() bool {
		// A forced failover gives up after 5 s without the masters' votes: asked again then.
		if time.Since(asked) > 5*time.Second {
			asked = time.Now()
			_ = r.Do(context.Background(), "CLUSTER", "FAILOVER", "FORCE").Error()
		}
		role, err := r.Do(context.Background(), "ROLE").ToArray()
		if err != nil || len(role) == 0 {
			return false
		}
		s, _ := role[0].ToString()
		return s == "master"
	})
	rc.Promoted(i)
	d.masters[i] = r.Addr()
	return err
}

// restartMaster restarts shard i's crashed old master and waits until the shard is whole.
func (d *deployment) restartMaster(i int) error {
	rc := d.cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rc.Replicas[i].Restart(ctx); err != nil {
		return err
	}
	return d.shardWhole(ctx, i)
}

// shardWhole waits until shard i's old master is the promoted master's replica, in sync, and
// every node agrees on the slots again: the shard is whole, its writes confirmable again.
func (d *deployment) shardWhole(ctx context.Context, i int) error {
	rc := d.cluster
	old := rc.Replicas[i]
	// A replica's ROLE names the port its master announces (a proxy's, for a node first
	// started as a master).
	want := strconv.Itoa(rc.Nodes[i].Port)
	if a := rc.Nodes[i].AnnouncePort; a != 0 {
		want = strconv.Itoa(a)
	}
	if err := poll(time.Minute, "the old master rejoins as the promoted one's replica", func() bool {
		role, err := old.Do(ctx, "ROLE").ToArray()
		if err != nil || len(role) < 4 {
			return false
		}
		kind, _ := role[0].ToString()
		port, _ := role[2].AsInt64()
		state, _ := role[3].ToString()
		return kind == "slave" && strconv.FormatInt(port, 10) == want && state == "connected"
	}); err != nil {
		return err
	}
	if err := rc.WaitAgreed(ctx); err != nil {
		return err
	}
	delete(d.crashed, i)
	return d.clusterInSync()
}

// logClock is how the fault logs say when (UTC, as the rate limits' windows are named), so a
// window the check refuses can be set beside the faults.
const logClock = "15:04:05.000"

// reached waits until every in-process replica (the workload's and the limited tenant's) reads
// key through its own client without an error.
func (d *deployment) reached(key string) error {
	for _, g := range append(slices.Clone(d.gateways), d.limited...) {
		if g.store == nil {
			continue
		}
		c := g.store.Client
		if err := poll(30*time.Second, "a replica reaching the promoted master", func() bool {
			return c.Do(context.Background(), c.B().Get().Key(key).Build()).NonRedisError() == nil
		}); err != nil {
			return err
		}
	}
	return nil
}

func init() {
	// cluster, every cycle: a fifth in, the slot holding the quote drafts migrates from its
	// master to the next, in batches; at half the cycle the master that received it is
	// killed (SIGKILL) and its replica promoted; at three quarters the killed node is started
	// again and rejoins as the promoted master's replica, so the next cycle migrates and
	// crashes again from a whole cluster (each shard's roles swapped by then).
	faults["cluster"] = fault{name: "cluster", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		at := time.Now()
		if !sleep(ctx, p/5) {
			return nil
		}
		end := n.span()
		victim, key, err := d.migrateQuoteSlot(context.Background())
		if err != nil {
			return err
		}
		n.Migrations++
		end()
		if !sleep(ctx, p/2-time.Since(at)) {
			return nil
		}
		// The span ends once every in-process replica's client reaches the promoted master
		// (a read of the migrated slot answers): a cluster client learns the new owner only by
		// refreshing its topology, and until then the limiter cannot sync (each replica
		// enforces the limit alone: up to n × limit). The promoted master has no replica until
		// the old one is back, which refuses confirmed writes (503) but not the limiter's
		// unconfirmed flush, so the windows after the span are held to the quiet bound.
		end = n.span()
		crashed := time.Now()
		if err := d.crashMaster(victim); err != nil {
			return err
		}
		n.Failovers++
		promoted := time.Now()
		err = d.reached(key)
		end()
		d.t.Logf("master %d crashed at %s: replica promoted in %v, reached by every replica %v later", victim,
			crashed.UTC().Format(logClock), promoted.Sub(crashed).Round(time.Millisecond), time.Since(promoted).Round(time.Millisecond))
		if err != nil || !sleep(ctx, 3*p/4-time.Since(at)) {
			return err
		}
		back := time.Now()
		if err := d.restartMaster(victim); err != nil {
			return err
		}
		n.Rejoins++
		d.t.Logf("shard %d restarted at %s, whole again %v later", victim, back.UTC().Format(logClock), time.Since(back).Round(time.Millisecond))
		return nil
	}}
}
