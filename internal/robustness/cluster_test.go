package robustness

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// A cluster deployment: three masters, each with a replica (testredis.StartReplicatedCluster;
// the masters announce proxies, which a crash cuts), the gateways given the seed list. Its
// fault migrates a slot holding a quote draft between two masters while the workload runs
// (MIGRATE in batches of one key, a pause after each, so requests meet the slot MIGRATING and
// IMPORTING and get ASK redirections), then crashes the master that received it and promotes
// its replica (CLUSTER FAILOVER FORCE, as the failover suite does: the cluster's own
// detection takes cluster-node-timeout more).

// clusterVictim is the master the fault migrates a slot to and then crashes; the slot comes
// from master 0 (testredis.Cluster asks node 0 about slots, so node 0 stays up).
const clusterVictim = 1

// startClusterDeployment starts the cluster and waits until every replica holds its master's
// writes.
func startClusterDeployment(t *testing.T) *deployment {
	t.Helper()
	testredisUnset(t) // StartReplicatedCluster skips
	d := &deployment{t: t, cluster: testredis.StartReplicatedCluster(t, 0), crashed: map[int]bool{}}
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

// migrateQuoteSlot moves the slot of a quote draft master 0 holds to clusterVictim.
func (d *deployment) migrateQuoteSlot(ctx context.Context) error {
	rc := d.cluster
	keys, err := rc.Do(ctx, 0, "KEYS", d.prefix+":v1:quote:*").AsStrSlice()
	if err != nil || len(keys) == 0 {
		return fmt.Errorf("no quote on master 0 to migrate (%v)", err)
	}
	slot, err := rc.KeySlot(ctx, keys[0])
	if err != nil {
		return err
	}
	start := time.Now()
	moved, err := rc.Migrate(ctx, testredis.Migration{Slot: slot, From: 0, To: clusterVictim, Batch: 1,
		After: func(int) { time.Sleep(300 * time.Millisecond) }})
	d.t.Logf("slot %d (%s): %d keys moved from master 0 to master %d in %v", slot, keys[0], moved, clusterVictim, time.Since(start).Round(time.Millisecond))
	return err
}

// crashMaster kills master i, cuts its proxy and promotes its replica.
func (d *deployment) crashMaster(i int) error {
	rc := d.cluster
	rc.Nodes[i].Kill()
	rc.Links[i].Cut()
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
	d.masters[i] = r.Addr()
	return err
}

func init() {
	// cluster: a fifth into the first cycle a slot holding a quote draft migrates from master
	// 0 to master 1, key by key; at half the cycle master 1 is killed (SIGKILL) and its
	// replica promoted. Once per run: testredis' migration needs every master up, and a
	// crashed node is not restarted (its replica, promoted, has no replica after: the
	// gateways refuse writes to its slots, 503).
	faults["cluster"] = fault{name: "cluster", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if n.Failovers > 0 || !sleep(ctx, p/5) {
			return nil
		}
		at := time.Now()
		end := n.span()
		if err := d.migrateQuoteSlot(context.Background()); err != nil {
			return err
		}
		n.Migrations++
		end()
		if !sleep(ctx, p*3/10-time.Since(at)) {
			return nil
		}
		defer n.span()()
		if err := d.crashMaster(clusterVictim); err != nil {
			return err
		}
		n.Failovers++
		return nil
	}}
}
