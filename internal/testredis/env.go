package testredis

import (
	"context"
	"fmt"
	"slices"
)

// The shared test environment (cmd/redisenv, behind scripts/redis-env.sh) runs its cluster
// nodes as daemons that outlive the command; these join and check them, with the same code
// that forms the private clusters of the fault tests.

// FormCluster joins the cluster-enabled, empty Redis nodes listening on 127.0.0.1 at ports
// (cluster bus on port+10000) into one cluster of masters, and waits until all agree.
func FormCluster(ctx context.Context, ports []int) error {
	c := daemonCluster(ports)
	defer c.stop()
	return c.form(ctx)
}

// ClusterHealthy reports whether the nodes at ports form one agreed cluster of exactly these
// nodes (every slot assigned, cluster_state:ok everywhere); why says what is not.
func ClusterHealthy(ctx context.Context, ports []int) (ok bool, why string) {
	c := daemonCluster(ports)
	defer c.stop()
	if err := c.connect(ctx); err != nil {
		return false, err.Error()
	}
	if ok, why := c.agreed(ctx); !ok {
		return false, why
	}
	owners, err := c.slotOwners(ctx, 0)
	if err != nil {
		return false, err.Error()
	}
	ids := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		ids[i] = n.ID
	}
	for _, id := range owners {
		if !slices.Contains(ids, id) {
			return false, fmt.Sprintf("a slot belongs to node %s, not one of ports %v", id, ports)
		}
	}
	return true, ""
}

func daemonCluster(ports []int) *Cluster {
	c := &Cluster{}
	for _, p := range ports {
		c.Nodes = append(c.Nodes, &ClusterNode{Port: p, BusPort: p + 10000})
	}
	return c
}
