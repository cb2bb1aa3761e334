package testredis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Cluster is a private Redis 8 cluster of three masters (no replicas) on free loopback ports.
// Tests that change the topology (moving a slot) use one of their own, never the shared
// cluster from HASHGATE_TEST_REDIS_CLUSTER, which other tests are using at the same time.
type Cluster struct {
	t     testing.TB
	Nodes []*ClusterNode
	// replicas is the number of replicas that joined the masters (a ReplicatedCluster's):
	// every node knows Nodes + replicas nodes.
	replicas int
}

// ClusterNode is one master of a private cluster.
type ClusterNode struct {
	Port int
	// AnnouncePort is the port the node announces to clients and replicas (0: Port).
	AnnouncePort int
	BusPort      int
	// AnnounceBusPort is the cluster bus port the node announces (0: BusPort).
	AnnounceBusPort int
	ID              string
	cmd             *exec.Cmd
	admin           rueidis.Client
}

// Addr is the node's host:port.
func (n *ClusterNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.Port) }

// clusterMasters is the size of a private cluster.
const clusterMasters = 3

// StartCluster starts three cluster-enabled Redis 8 processes, assigns every slot, joins them
// and waits until every node reports cluster_state:ok; it skips the test when
// HASHGATE_REDIS8_SERVER is unset. DEBUG is enabled for local clients (stall tests use DEBUG
// SLEEP). The processes are killed at cleanup.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := os.Getenv(EnvRedis8Server)
	if bin == "" {
		t.Skipf("%s is unset (run `make test`)", EnvRedis8Server)
	}
	c := &Cluster{t: t}
	t.Cleanup(c.stop)
	// A port found free may be taken before the node binds it (by another test's server, the
	// private clusters of parallel tests included): the node then exits, and whatever listens
	// there is not ours. connect notices (errPortTaken) and the cluster starts over on new ports.
	for attempt := 1; ; attempt++ {
		ports := freePorts(t, 2*clusterMasters)
		for i := range clusterMasters {
			n := &ClusterNode{Port: ports[2*i], BusPort: ports[2*i+1]}
			c.Nodes = append(c.Nodes, n)
			startNode(t, bin, n, "--enable-debug-command", "local")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := c.form(ctx)
		cancel()
		if errors.Is(err, errPortTaken) && attempt < 3 {
			c.stop()
			c.Nodes = nil
			continue
		}
		if err != nil {
			t.Fatalf("private cluster: %v", err)
		}
		return c
	}
}

// StartClusterNode starts one cluster-enabled Redis 8 on free ports that is in no cluster yet
// (a test joins it with CLUSTER MEET), or skips the test when HASHGATE_REDIS8_SERVER is unset.
// It is killed at cleanup.
func StartClusterNode(t testing.TB) *ClusterNode {
	t.Helper()
	bin := os.Getenv(EnvRedis8Server)
	if bin == "" {
		t.Skipf("%s is unset (run `make test`)", EnvRedis8Server)
	}
	for attempt := 1; ; attempt++ {
		p := freePorts(t, 2)
		n := &ClusterNode{Port: p[0], BusPort: p[1]}
		startNode(t, bin, n)
		t.Cleanup(n.Kill)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := WaitOwn(ctx, n.Port, n.cmd)
		cancel()
		if err == nil {
			return n
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("cluster node: %v", err)
		}
	}
}

// startNode starts n's process: a cluster-enabled Redis 8 on its ports with a data folder of
// its own, no persistence, and extra settings.
func startNode(t testing.TB, bin string, n *ClusterNode, extra ...string) {
	t.Helper()
	n.cmd = exec.Command(bin, append([]string{"--port", strconv.Itoa(n.Port), "--cluster-port", strconv.Itoa(n.BusPort),
		"--bind", "127.0.0.1", "--dir", t.TempDir(), "--daemonize", "no", "--logfile", "",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
		"--appendonly", "no", "--save", ""}, extra...)...)
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start cluster node: %v", err)
	}
}

// connect waits for every node to listen (a node the test started: to be the port's
// listener, else errPortTaken) and opens its admin client.
func (c *Cluster) connect(ctx context.Context) error {
	for i, n := range c.Nodes {
		wait := WaitOwn
		if n.cmd == nil { // (a node started outside the test, env.go's)
			wait = waitListening
		}
		if err := wait(ctx, n.Port, n.cmd); err != nil {
			return err
		}
		var err error
		n.admin, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr()},
			ForceSingleClient: true, DisableCache: true, DisableRetry: true})
		if err != nil {
			return fmt.Errorf("admin client %s: %w", n.Addr(), err)
		}
		if n.ID, err = c.Do(ctx, i, "CLUSTER", "MYID").ToString(); err != nil {
			return err
		}
	}
	return nil
}

// form connects to every node, assigns the slots (node i of n first owns
// [i*16384/n, (i+1)*16384/n)), joins the nodes and waits for agreement.
func (c *Cluster) form(ctx context.Context) error {
	if err := c.connect(ctx); err != nil {
		return err
	}
	for i := range c.Nodes {
		lo, hi := i*16384/len(c.Nodes), (i+1)*16384/len(c.Nodes)-1
		if err := c.Do(ctx, i, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)).Error(); err != nil {
			return err
		}
		// Distinct epochs, as redis-cli --cluster create sets them, so no collision has to be
		// resolved before the cluster agrees.
		if err := c.Do(ctx, i, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)).Error(); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes[1:] {
		if err := c.Do(ctx, 0, append([]string{"CLUSTER", "MEET"}, n.meetAddr()...)...).Error(); err != nil {
			return err
		}
	}
	return c.WaitAgreed(ctx)
}

// WaitAgreed polls until every node reports cluster_state:ok with every node known and every
// slot assigned, and all nodes map every slot to the same owner.
func (c *Cluster) WaitAgreed(ctx context.Context) error {
	var last string
	for {
		ok, why := c.agreed(ctx)
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster did not agree: %s", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Cluster) agreed(ctx context.Context) (bool, string) {
	var first map[int]string
	for i := range c.Nodes {
		info, err := c.Do(ctx, i, "CLUSTER", "INFO").ToString()
		if err != nil {
			return false, err.Error()
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384",
			"cluster_known_nodes:" + strconv.Itoa(len(c.Nodes)+c.replicas)} {
			if !strings.Contains(info, want+"\r\n") {
				return false, fmt.Sprintf("node %d: no %s", i, want)
			}
		}
		owners, err := c.slotOwners(ctx, i)
		if err != nil {
			return false, err.Error()
		}
		if first == nil {
			first = owners
			continue
		}
		for s, id := range first {
			if owners[s] != id {
				return false, fmt.Sprintf("node %d maps slot range at %d to another owner", i, s)
			}
		}
	}
	return true, ""
}

// slotOwners is node i's view: the first slot of each range → the owner's id.
func (c *Cluster) slotOwners(ctx context.Context, i int) (map[int]string, error) {
	ranges, err := c.Do(ctx, i, "CLUSTER", "SLOTS").ToArray()
	if err != nil {
		return nil, err
	}
	out := make(map[int]string, len(ranges))
	for _, r := range ranges {
		parts, err := r.ToArray()
		if err != nil || len(parts) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: unexpected reply")
		}
		lo, err := parts[0].AsInt64()
		if err != nil {
			return nil, err
		}
		master, err := parts[2].ToArray()
		if err != nil || len(master) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS: unexpected node entry")
		}
		id, err := master[2].ToString()
		if err != nil {
			return nil, err
		}
		out[int(lo)] = id
	}
	return out, nil
}

// URL is the seed list store.Open takes for a cluster ("host:port,host:port,...").
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return strings.Join(addrs, ",")
}

// Do sends one command to node i only (no redirection is followed).
func (c *Cluster) Do(ctx context.Context, i int, args ...string) rueidis.RedisResult {
	a := c.Nodes[i].admin
	return a.Do(ctx, a.B().Arbitrary(args...).Build())
}

func (c *Cluster) stop() {
	for _, n := range c.Nodes {
		if n.admin != nil {
			n.admin.Close()
		}
		if n.cmd != nil && n.cmd.Process != nil {
			_ = n.cmd.Process.Kill()
			_, _ = n.cmd.Process.Wait()
		}
	}
}

// do sends one command to the node only.
func (n *ClusterNode) do(ctx context.Context, args ...string) rueidis.RedisResult {
	return n.admin.Do(ctx, n.admin.B().Arbitrary(args...).Build())
}

// Do sends one command to node n only (a replica included).
func (n *ClusterNode) Do(ctx context.Context, args ...string) rueidis.RedisResult {
	return n.do(ctx, args...)
}

// Kill stops the node with SIGKILL.
func (n *ClusterNode) Kill() {
	if n.cmd != nil && n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_, _ = n.cmd.Process.Wait()
	}
}

// Restart starts the killed node again with its settings and data folder. Its nodes.conf
// brings it back as the node it was: a master replaced meanwhile learns so from the others
// (after the rejoin delay, during which it serves nothing) and becomes its replacement's
// replica, with an empty dataset it then syncs. Its admin client reconnects on its own.
func (n *ClusterNode) Restart(ctx context.Context) error {
	if n.cmd == nil {
		return errors.New("restart: the node was not started by the test")
	}
	cmd := exec.Command(n.cmd.Path, n.cmd.Args[1:]...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restart %s: %w", n.Addr(), err)
	}
	n.cmd = cmd
	if err := WaitOwn(ctx, n.Port, cmd); err != nil {
		return err
	}
	for {
		// The first command after the kill may meet the old connection's reset.
		err := n.admin.Do(ctx, n.admin.B().Ping().Build()).Error()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s: %w", n.Addr(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
