package testredis

import (
	"net"
	"slices"
	"testing"
)

// A port found free can be taken before a server binds it (CI saw a parallel test's server
// take a replicated cluster's master port: "the server for 127.0.0.1:40645 exited"). Every
// start goes on with new ports instead of failing the test, or, worse, of handing the test a
// server that is not its own.
func TestStartsGoOnWhenAPortIsTaken(t *testing.T) {
	sentinel := func(t *testing.T) []int {
		s := StartSentinel(t, SentinelOptions{})
		return append([]int{s.Primary.Port, s.Replica.Port}, s.Sentinels...)
	}
	replicated := func(t *testing.T) []int {
		rc := StartReplicatedCluster(t, 0)
		return append(nodePorts(rc.Nodes), nodePorts(rc.Replicas)...)
	}
	partitionable := func(t *testing.T) []int {
		rc := StartPartitionableCluster(t)
		return append(nodePorts(rc.Nodes), nodePorts(rc.Replicas)...)
	}
	starts := []struct {
		name  string
		start func(t *testing.T) []int // the ports of the servers started
		// the port taken: the one at index of the call'th reservation
		call, index int
	}{
		{"server", func(t *testing.T) []int { return []int{StartServer(t).Port} }, 1, 0},
		{"sentinel's primary", sentinel, 1, 0},
		{"a sentinel", sentinel, 3, 0},
		{"cluster node", func(t *testing.T) []int { return []int{StartClusterNode(t).Port} }, 1, 0},
		{"cluster", func(t *testing.T) []int { return nodePorts(StartCluster(t).Nodes) }, 1, 0},
		{"replicated cluster's master", replicated, 1, 0},
		{"replicated cluster's replica", replicated, 1, 2},
		{"partitionable cluster's master", partitionable, 1, 0},
		{"partitionable cluster's replica", partitionable, 1, 2},
	}
	takers := []struct {
		name string
		take func(t *testing.T) int
	}{
		{"by a listener", func(t *testing.T) int {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() { // (closing what it accepts: a client fails at once)
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			return l.Addr().(*net.TCPAddr).Port
		}},
		{"by another Redis", func(t *testing.T) int { return StartServer(t).Port }},
	}
	for _, st := range starts {
		for _, tk := range takers {
			t.Run(st.name+" "+tk.name, func(t *testing.T) {
				taken := tk.take(t)
				calls := 0
				freePorts = func(t testing.TB, n int) []int {
					calls++
					ports := reservePorts(t, n)
					if calls == st.call {
						ports[st.index] = taken
					}
					return ports
				}
				defer func() { freePorts = reservePorts }()
				ports := st.start(t)
				if calls <= st.call {
					t.Fatalf("ports reserved %d times: the start did not go on to new ports", calls)
				}
				if slices.Contains(ports, taken) {
					t.Fatalf("a server started is on the taken port %d: %v", taken, ports)
				}
			})
		}
	}
}

func nodePorts(nodes []*ClusterNode) []int {
	ports := make([]int, len(nodes))
	for i, n := range nodes {
		ports[i] = n.Port
	}
	return ports
}
