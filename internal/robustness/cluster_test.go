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
// that received it and promotes its replica (CLUSTER FAILOVER FORCE, as the failover suite does: the cluster's own
// detection takes cluster-node-timeout more).

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

// migrateQuoteSlot moves the slot of a quote draft (the tenant's drafts share its tag) from
// the master holding it to the next one, in about migrationBatches batches with a pause after
// each, and returns the master it moved to and a key of the slot.
func (d *deployment) migrateQuoteSlot(ctx context.Context) (int, string, error) {
	rc := d.cluster
	from, slot := -1, 0
	var key string
	for i := range rc.Nodes {
		keys, err := rc.Do(ctx, i, "KEYS", d.prefix+":v1:quote:*").AsStrSlice()
		if err != nil {
			return 0, "", err
		}
		if len(keys) > 0 {
			from, key = i, keys[0]
			break
		}
	}
	if from < 0 {
		return 0, "", fmt.Errorf("no quote draft on any master")
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
	// cluster: a fifth into the first cycle the slot holding the quote drafts migrates from
	// its master to the next, in batches; at half the cycle the master that received it is
	// killed (SIGKILL) and its replica promoted. Once per run: testredis' migration needs every master up, and a
	// crashed node is not restarted (its replica, promoted, has no replica after: the
	// gateways refuse writes to its slots, 503).
	faults["cluster"] = fault{name: "cluster", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if n.Failovers > 0 || !sleep(ctx, p/5) {
			return nil
		}
		at := time.Now()
		end := n.span()
		victim, key, err := d.migrateQuoteSlot(context.Background())
		if err != nil {
			return err
		}
		n.Migrations++
		end()
		if !sleep(ctx, p*3/10-time.Since(at)) {
			return nil
		}
		// The span ends once every in-process replica's client reaches the promoted master
		// (a read of the migrated slot answers): a cluster client learns the new owner only by
		// refreshing its topology, and until then the limiter cannot sync (each replica
		// enforces the limit alone: up to n × limit). The promoted master has no replica after
		// it, which refuses confirmed writes (503) but not the limiter's unconfirmed flush, so
		// the windows after the span are held to the quiet bound.
		defer n.span()()
		crashed := time.Now()
		if err := d.crashMaster(victim); err != nil {
			return err
		}
		n.Failovers++
		promoted := time.Now()
		err = d.reached(key)
		d.t.Logf("master %d crashed: replica promoted in %v, reached by every replica %v later", victim,
			promoted.Sub(crashed).Round(time.Millisecond), time.Since(promoted).Round(time.Millisecond))
		return err
	}}
}
