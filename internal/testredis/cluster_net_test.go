package testredis

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Isolate is a real partition to the cluster: the cut-off master is failed over by the
// cluster's own election (no CLUSTER FAILOVER), refuses writes on its side once it knows it is
// in a minority, and after Heal rejoins as its replacement's replica. (The bus is cut both
// ways, the master's own links by its source address: a node that still receives its pings
// does not mark it failed.)
func TestIsolateFailsOverTheMaster(t *testing.T) {
	rc := StartPartitionableCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	role := func(n *ClusterNode) string {
		r, err := n.Do(ctx, "ROLE").ToArray()
		if err != nil || len(r) == 0 {
			return ""
		}
		s, _ := r[0].ToString()
		return s
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not within 90 s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	m, r := rc.Nodes[0], rc.Replicas[0]
	rc.Isolate(m, nil, []string{"127.0.0.1"})
	start := time.Now()
	wait("the replica promoted by the cluster", func() bool { return role(r) == "master" })
	t.Logf("promoted %v after the cut", time.Since(start).Round(time.Millisecond))
	wait("the cut-off master knowing it is in a minority (cluster_state:fail: it refuses every command)", func() bool {
		info, err := m.Do(ctx, "CLUSTER", "INFO").ToString()
		return err == nil && strings.Contains(info, "cluster_state:fail")
	})
	rc.Heal()
	rc.Promoted(0)
	wait("the old master rejoining as a replica", func() bool { return role(m) == "slave" })
	if err := rc.WaitAgreed(ctx); err != nil {
		t.Fatal(err)
	}
}
