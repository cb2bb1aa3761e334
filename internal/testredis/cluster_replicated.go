package testredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// ReplicatedCluster is a private cluster of three masters, each with one replica that
// replicates through a Proxy (Links[i] in front of the node first started as master i: each
// master announces its proxy's port, so replicas and clients reach it through the proxy; only
// replication links are slowed). Nodes[i] and Replicas[i] are shard i's master and replica
// now: Promoted swaps them after a failover.
type ReplicatedCluster struct {
	*Cluster
	Replicas []*ClusterNode
	Links    []*Proxy
	// net: every node's proxies and source address (StartPartitionableCluster); nil otherwise.
	net *clusterNet
}

// Promoted records that shard i's replica has taken over its slots: Nodes[i] is the promoted
// node from now on, and Replicas[i] the old master (dead, or restarted as its replica).
func (rc *ReplicatedCluster) Promoted(i int) {
	rc.Nodes[i], rc.Replicas[i] = rc.Replicas[i], rc.Nodes[i]
}

// Link is the proxy in front of n, or nil (a node first started as a replica has none).
func (rc *ReplicatedCluster) Link(n *ClusterNode) *Proxy {
	for _, l := range rc.Links {
		if n.AnnouncePort == l.Port {
			return l
		}
	}
	return nil
}

// StartReplicatedCluster starts the masters behind their proxies (delay on the replication
// links), forms the cluster, adds one replica per master and waits until every replica's link
// is up and every master lists its replica online.
func StartReplicatedCluster(t testing.TB, delay time.Duration) *ReplicatedCluster {
	t.Helper()
	return startReplicatedCluster(t, delay, nil)
}

func startReplicatedCluster(t testing.TB, delay time.Duration, net *clusterNet) *ReplicatedCluster {
	t.Helper()
	bin := os.Getenv(EnvRedis8Server)
	if bin == "" {
		t.Skipf("%s is unset (run `make test`)", EnvRedis8Server)
	}
	// The data folders' parent first: cleanups run last-in first-out, so the processes are
	// stopped before their folders are removed.
	root := t.TempDir()
	rc := &ReplicatedCluster{Cluster: &Cluster{t: t}, net: net}
	t.Cleanup(rc.stop)
	dirs := map[int]string{}
	start := func(n *ClusterNode, extra ...string) {
		if dirs[n.Port] == "" {
			dirs[n.Port] = filepath.Join(root, strconv.Itoa(n.Port))
			if err := os.Mkdir(dirs[n.Port], 0o700); err != nil {
				t.Fatal(err)
			}
		}
		args := append([]string{"--port", strconv.Itoa(n.Port), "--cluster-port", strconv.Itoa(n.BusPort),
			"--bind", "127.0.0.1", "--dir", dirs[n.Port], "--daemonize", "no", "--logfile", "",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--appendonly", "no", "--save", "", "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}, extra...)
		if net != nil {
			args = append(args, net.args(t, n, rc.Link(n))...)
		}
		n.cmd = exec.Command(bin, args...)
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("start cluster node: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A port found free may be taken before its master binds it (by a parallel test's
	// server): the master exits, or another process answers, and the masters start over on
	// new ports (as a private cluster's do).
	var ports []int
	for attempt := 1; ; attempt++ {
		ports = freePorts(t, 4*clusterMasters)
		for i := range clusterMasters {
			n := &ClusterNode{Port: ports[4*i], BusPort: ports[4*i+1]}
			link := StartProxy(t, n.Addr(), delay)
			n.AnnouncePort = link.Port
			rc.Links = append(rc.Links, link)
			rc.Nodes = append(rc.Nodes, n)
			extra := []string{"--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", strconv.Itoa(link.Port)}
			if net == nil { // (with net, a proxy's: clusterNet.args)
				extra = append(extra, "--cluster-announce-bus-port", strconv.Itoa(n.BusPort))
			}
			start(n, extra...)
		}
		err := rc.form(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("replicated cluster: %v", err)
		}
		rc.Cluster.stop()
		for _, l := range rc.Links {
			l.Close()
		}
		rc.Nodes, rc.Links = nil, nil
		if net != nil {
			net.reset()
		}
	}
	for i, m := range rc.Nodes {
		r := &ClusterNode{Port: ports[4*i+2], BusPort: ports[4*i+3]}
		// The replica starts well after its ports were found free: when another process took
		// one meanwhile (the node exits, or another process listens there), it starts again on
		// new ones.
		for attempt := 1; ; attempt++ {
			start(r)
			err := WaitOwn(ctx, r.Port, r.cmd)
			if err == nil {
				break
			}
			if !errors.Is(err, errPortTaken) || attempt == 3 {
				t.Fatalf("replica %s: %v", r.Addr(), err)
			}
			_ = r.cmd.Process.Kill()
			_, _ = r.cmd.Process.Wait()
			if net != nil {
				net.forget(r)
			}
			p := freePorts(t, 2)
			r = &ClusterNode{Port: p[0], BusPort: p[1]}
		}
		rc.Replicas = append(rc.Replicas, r) // (stopped at cleanup from here on)
		rc.replicas = len(rc.Replicas)
		var err error
		r.admin, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{r.Addr()},
			ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		if err == nil {
			r.ID, err = r.do(ctx, "CLUSTER", "MYID").ToString()
		}
		if err != nil {
			t.Fatalf("replica %s: %v", r.Addr(), err)
		}
		if err := r.do(ctx, append([]string{"CLUSTER", "MEET"}, m.meetAddr()...)...).Error(); err != nil {
			t.Fatalf("meet: %v", err)
		}
		for {
			err := r.do(ctx, "CLUSTER", "REPLICATE", m.ID).Error()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("replicate %s: %v", m.ID, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	for i, r := range rc.Replicas {
		if err := WaitLinkUp(ctx, r.Port); err != nil {
			t.Fatal(err)
		}
		for {
			role, err := rc.Do(ctx, i, "ROLE").ToArray()
			if err == nil && len(role) == 3 {
				if reps, _ := role[2].ToArray(); len(reps) == 1 {
					break
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("master %d lists no online replica", i)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// Every master must know every replica: a master that has not heard of a replica yet (the
	// gossip about it comes from the nodes that know it) ignores its requests for a failover
	// vote, and once the replica's own master is dead, possibly for good.
	if err := rc.WaitAgreed(ctx); err != nil {
		t.Fatalf("replicated cluster: %v", err)
	}
	return rc
}

func (rc *ReplicatedCluster) stop() {
	for _, r := range rc.Replicas {
		if r.admin != nil {
			r.admin.Close()
		}
		r.Kill()
	}
	rc.Cluster.stop()
}
