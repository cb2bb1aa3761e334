package store

import (
	"context"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// detectReplicas tells auto durability, at start, whether the deployment has replicas, from
// what each topology records of them even while they are cut off from their primary:
//
//   - Sentinel: SENTINEL REPLICAS on a Sentinel lists every replica it has discovered, connected
//     or not (Sentinel forgets none without SENTINEL RESET).
//   - Cluster: CLUSTER NODES lists every replica of every master, failed ones included.
//   - Every topology: a primary's ROLE lists its replicas connected now, and its INFO
//     replication has min_slaves_good_slaves when min-replicas-to-write is set (the operator
//     declared that writes need replicas).
//
// A standalone primary keeps no record of a replica while it is disconnected: a gateway started
// during such a cut learns of it only when it connects again (README, "Redis Sentinel").
// Each question is best effort (a Redis user not allowed it, a Sentinel down): the write-time
// ROLE still learns.
func (s *Store) detectReplicas(ctx context.Context, opt rueidis.ClientOption) {
	d := s.Durable
	for _, n := range s.raw.Nodes() {
		c, cancel := context.WithTimeout(ctx, 2*s.Timeout) // two calls; a silent node is passed over
		if online, err := onlineReplicas(n.Do(c, n.B().Role().Build())); err == nil && online > 0 {
			d.replicated.Store(true)
		}
		info, err := n.Do(c, n.B().Info().Section("replication").Build()).ToString()
		cancel()
		if err == nil && strings.Contains(info, "\nmin_slaves_good_slaves:") {
			d.replicated.Store(true)
		}
	}
	switch s.Caps.Topology {
	case Cluster:
		nodes, err := s.askAny(ctx, func(n rueidis.Client) rueidis.Completed { return n.B().ClusterNodes().Build() }).ToString()
		if err == nil && clusterHasReplica(nodes) {
			d.replicated.Store(true)
		}
	case Sentinel:
		if sentinelHasReplica(ctx, opt, s.Timeout) {
			d.replicated.Store(true)
		}
	}
}

// clusterHasReplica reports whether a CLUSTER NODES reply lists a replica: each line is
// "<id> <ip:port@cport> <flags> ..." with flags such as "slave" or "myself,slave,fail".
func clusterHasReplica(nodes string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		for _, flag := range strings.Split(f[2], ",") {
			if flag == "slave" || flag == "replica" {
				return true
			}
		}
	}
	return false
}

// sentinelHasReplica asks the Sentinels of opt, one after the other until one answers within
// timeout, whether they know a replica of the master set.
func sentinelHasReplica(ctx context.Context, opt rueidis.ClientOption, timeout time.Duration) bool {
	dialer := opt.Sentinel.Dialer
	if dialer.Timeout <= 0 || dialer.Timeout > timeout {
		dialer.Timeout = timeout
	}
	for _, addr := range opt.InitAddress {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
			DisableCache: true, DisableRetry: true, Username: opt.Sentinel.Username, Password: opt.Sentinel.Password,
			TLSConfig: opt.Sentinel.TLSConfig, Dialer: dialer, ClientName: opt.Sentinel.ClientName})
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		reps, err := c.Do(cctx, c.B().SentinelReplicas().Master(opt.Sentinel.MasterSet).Build()).ToArray()
		cancel()
		c.Close()
		if err == nil {
			return len(reps) > 0
		}
	}
	return false
}
