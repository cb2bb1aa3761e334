package robustness

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// Two cluster faults that leave the failover to the cluster itself (no CLUSTER FAILOVER):
// a network partition that cuts a master off with one gateway replica, and a zombie master,
// frozen (SIGSTOP) past cluster-node-timeout with a gateway process, its replica promoted
// meanwhile, then woken still believing it owns its slots. Both run on a partitionable
// cluster (testredis.StartPartitionableCluster: every node behind proxies of its own, each
// connecting from a loopback address of its own) and hit the shard holding the quote drafts,
// so the object writes meet it; the sessions and token families on it are whichever hash
// there.

// promotedByCluster waits until shard i's replica has been promoted by the cluster's own
// failover (its masters' votes after cluster-node-timeout), and records it.
func (d *deployment) promotedByCluster(i int, n *faultCounts) error {
	r := d.cluster.Replicas[i]
	err := poll(30*time.Second, fmt.Sprintf("shard %d's replica promoted by the cluster", i), func() bool {
		role, err := r.Do(context.Background(), "ROLE").ToArray()
		if err != nil || len(role) == 0 {
			return false
		}
		s, _ := role[0].ToString()
		return s == "master"
	})
	if err != nil {
		return err
	}
	d.cluster.Promoted(i)
	d.masters[i] = r.Addr()
	n.Failovers++
	return nil
}

// healed waits until shard i (its old master now Replicas[i]) is whole: the old master the
// promoted one's replica, in sync, every node agreeing on the slots.
func (d *deployment) healed(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return d.shardWhole(ctx, i)
}

func init() {
	// cluster-partition: a fifth into the cycle the network splits: the master holding the
	// quote drafts and the last gateway replica on one side, every other node (its replica
	// among them) and the other replicas (the rate-limited ones too) on the other. The
	// majority marks the master failed after cluster-node-timeout and its replica is elected
	// in its place; the cut-off master takes the last gateway's writes until it notices it is
	// in a minority (cluster-node-timeout too) and refuses them (CLUSTERDOWN). Three fifths in
	// (or once the failover is done) the network heals: the old master learns of the newer
	// configuration, becomes the promoted one's replica and discards what it took, and the
	// last gateway follows the redirections. The cut lasts until the shard is whole again.
	faults["cluster-partition"] = fault{name: "cluster-partition", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		at := time.Now()
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		i, _, err := d.quoteShard(context.Background())
		if err != nil {
			return err
		}
		var away []string
		for k := range d.gateways[:len(d.gateways)-1] {
			away = append(away, gatewayIP(k))
		}
		away = append(away, "127.0.0.1") // the rate-limited replicas
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{time.Now(), time.Now().Add(p)})
		d.cluster.Isolate(d.cluster.Nodes[i], []string{gatewayIP(len(d.gateways) - 1)}, away)
		n.Partitions++
		err = d.promotedByCluster(i, n)
		promoted := time.Now()
		if err == nil {
			sleep(ctx, 3*p/5-time.Since(at))
		}
		d.cluster.Heal()
		healed := time.Now()
		if err == nil {
			err = d.healed(i)
		}
		n.Cuts[cut][1] = time.Now()
		d.t.Logf("master %d cut off at %s: replica promoted by the cluster %v later; healed at %s, whole %v later", i,
			n.Cuts[cut][0].UTC().Format(logClock), promoted.Sub(n.Cuts[cut][0]).Round(time.Millisecond),
			healed.UTC().Format(logClock), n.Cuts[cut][1].Sub(healed).Round(time.Millisecond))
		return err
	}}
	// cluster-zombie: a fifth into the cycle the master holding the quote drafts is frozen
	// (SIGSTOP) together with the last replica, a cmd/gateway process whose connections to it
	// stay open; the cluster marks the master failed after cluster-node-timeout and promotes
	// its replica; then (pauseFor after the freeze, or once the failover is done) the old
	// master is thawed, still a master in its own eyes, and the gateway right after it with
	// the requests its clients sent meanwhile queued; the zombie hears the newer configuration
	// on the bus and becomes the promoted one's replica, discarding what it took meanwhile.
	// The cut lasts from the freeze until the shard is whole again.
	faults["cluster-zombie"] = fault{name: "cluster-zombie", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		i, _, err := d.quoteShard(context.Background())
		if err != nil {
			return err
		}
		at := time.Now()
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{at, at.Add(p)})
		zombie := d.cluster.Nodes[i]
		zombie.Pause()
		g := d.pauseProcess()
		err = d.promotedByCluster(i, n)
		promoted := time.Now()
		// Woken within a client's request timeout, so what queued on the gateway is answered.
		time.Sleep(time.Until(at.Add(pauseFor(p))))
		zombie.Resume()
		g.proc.signal(syscall.SIGCONT)
		n.Pauses++
		n.GatewayPauses++
		woken := time.Now()
		if err == nil {
			err = d.healed(i)
		}
		n.Cuts[cut][1] = time.Now()
		d.t.Logf("master %d frozen at %s: replica promoted by the cluster %v later; woken %v after the freeze, whole %v later", i,
			at.UTC().Format(logClock), promoted.Sub(at).Round(time.Millisecond), woken.Sub(at).Round(time.Millisecond),
			n.Cuts[cut][1].Sub(woken).Round(time.Millisecond))
		return err
	}}
}
