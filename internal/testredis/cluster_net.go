package testredis

import (
	"strconv"
	"syscall"
	"testing"
)

// A partitionable cluster: every node of a ReplicatedCluster is reached only through two
// proxies of its own, one in front of its client port (a master's is its Link) and one in
// front of its cluster bus port, which it announces (cluster-announce-port, -bus-port), and
// connects from a loopback address of its own (bind-source-addr: its replication and its bus
// links). So Isolate can cut any node off from the others and from chosen clients, both
// ways, without a firewall, and the cluster then runs its own failure detection and failover
// (cluster-node-timeout), as across a real network partition.

// clusterNet holds each node's proxies and source address.
type clusterNet struct {
	ip    map[*ClusterNode]string
	bus   map[*ClusterNode]*Proxy
	front map[*ClusterNode]*Proxy
}

// ClusterNodeIP is the loopback address the kth node started (masters 0–2, then their
// replicas) connects from.
func ClusterNodeIP(k int) string { return "127.0.0." + strconv.Itoa(41+k) }

// StartPartitionableCluster is StartReplicatedCluster with every node behind proxies of its
// own and a source address of its own (no delay on the replication links).
func StartPartitionableCluster(t testing.TB) *ReplicatedCluster {
	t.Helper()
	return startReplicatedCluster(t, 0, &clusterNet{ip: map[*ClusterNode]string{}, bus: map[*ClusterNode]*Proxy{},
		front: map[*ClusterNode]*Proxy{}})
}

// args starts n's proxies (its client port's: front, when it has none yet) and returns its
// settings: the proxies' ports announced, its own source address.
func (cn *clusterNet) args(t testing.TB, n *ClusterNode, front *Proxy) []string {
	ip := ClusterNodeIP(len(cn.ip))
	if front == nil {
		front = StartProxy(t, n.Addr(), 0)
		n.AnnouncePort = front.Port
	}
	bus := StartProxy(t, "127.0.0.1:"+strconv.Itoa(n.BusPort), 0)
	n.AnnounceBusPort = bus.Port
	cn.ip[n], cn.bus[n], cn.front[n] = ip, bus, front
	return []string{"--bind-source-addr", ip, "--cluster-announce-ip", "127.0.0.1",
		"--cluster-announce-port", strconv.Itoa(front.Port), "--cluster-announce-bus-port", strconv.Itoa(bus.Port)}
}

// forget closes n's proxies and frees its source address (n did not start: it starts again
// as a new node, on new ports).
func (cn *clusterNet) forget(n *ClusterNode) {
	for _, p := range []*Proxy{cn.bus[n], cn.front[n]} {
		if p != nil {
			p.Close()
		}
	}
	delete(cn.ip, n)
	delete(cn.bus, n)
	delete(cn.front, n)
}

// reset forgets every node (the masters start over on new ports).
func (cn *clusterNet) reset() {
	for n := range cn.ip {
		cn.forget(n)
	}
}

// meetAddr is what CLUSTER MEET names n by: its own ports, or, behind a partitionable
// cluster's proxies, the proxies' (so no bus link bypasses them).
func (n *ClusterNode) meetAddr() []string {
	if n.AnnounceBusPort == 0 {
		return []string{"127.0.0.1", strconv.Itoa(n.Port), strconv.Itoa(n.BusPort)}
	}
	return []string{"127.0.0.1", strconv.Itoa(n.AnnouncePort), strconv.Itoa(n.AnnounceBusPort)}
}

// Isolate partitions the network: n alone on one side with the clients at with (IPs), every
// other node and the clients at away on the other. Every connection across is reset and new
// ones refused (the bus both ways, replication, clients) until Heal. A partitionable cluster
// only (StartPartitionableCluster).
func (rc *ReplicatedCluster) Isolate(n *ClusterNode, with, away []string) {
	cn := rc.net
	var others []string
	for o, ip := range cn.ip {
		if o != n {
			others = append(others, ip)
			cn.bus[o].Block(cn.ip[n])
			cn.front[o].Block(append([]string{cn.ip[n]}, with...)...)
		}
	}
	cn.bus[n].Block(others...)
	cn.front[n].Block(append(others, away...)...)
}

// Heal ends Isolate: every proxy accepts every source again.
func (rc *ReplicatedCluster) Heal() {
	for _, p := range rc.net.bus {
		p.Heal()
	}
	for _, p := range rc.net.front {
		p.Heal()
	}
}

// Pause freezes the node (SIGSTOP): its sockets stay open, it answers nothing, its bus falls
// silent, until Resume.
func (n *ClusterNode) Pause() { _ = n.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume thaws a paused node (SIGCONT).
func (n *ClusterNode) Resume() { _ = n.cmd.Process.Signal(syscall.SIGCONT) }
