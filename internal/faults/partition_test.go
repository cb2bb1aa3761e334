package faults

import (
	"net/http"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
)

// Acknowledged revocations survive a partition between primary and replica (issue 22). The
// replication link is cut (testredis.Proxy.Partition: the primary sees its replica go at once
// and the replica cannot sync again) before 10 sessions are revoked, 10 logged out and 10
// tokens revoked through the gateway with the default GATEWAY_DURABLE_REPLICAS=auto; then the
// primary dies and the replica is promoted. No acknowledged revocation may be alive on it, and
// every refusal during the cut is a 503 problem with Retry-After within the Redis timeout.
//
// Where the topology names the replica while it is cut off (Sentinel's SENTINEL REPLICAS, the
// cluster's CLUSTER NODES), the gateway is restarted during the cut: what it learns at start
// must be enough. A standalone primary lists its replicas only while they are connected, so
// there the gateway has seen the replica before the cut; a gateway that starts during the cut
// relies on Redis's own min-replicas-to-write (its NOREPLICAS refusal must be a 503 too). The
// control runs with GATEWAY_DURABLE_REPLICAS=0 and must see a loss.

const (
	partitionRounds = 10
	// partitionRedisTimeout is GATEWAY_REDIS_TIMEOUT; a refusal must come within it (plus
	// partitionSlack for a loaded test machine).
	partitionRedisTimeout = time.Second
	partitionSlack        = 250 * time.Millisecond
)

type partitionCase struct {
	start   func(t *testing.T) failoverTopology
	durable string
	// restart: the gateway is restarted during the cut; follows: it follows the promoted
	// primary (Sentinel, cluster), which has no replica yet, so a revocation answers 503 there too.
	restart, follows bool
	control          bool
}

func TestPartitionKeepsAcknowledgedRevocations(t *testing.T) {
	t.Parallel()
	cases := map[string]partitionCase{
		"standalone": {start: func(t *testing.T) failoverTopology { return standaloneFailover(t, 0) }, durable: "auto"},
		"standalone/durable=0": {start: func(t *testing.T) failoverTopology { return standaloneFailover(t, 0) },
			durable: "0", control: true},
		"standalone/min-replicas-to-write": {start: func(t *testing.T) failoverTopology {
			return standaloneFailover(t, 0, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
		}, durable: "auto", restart: true},
		"sentinel": {start: func(t *testing.T) failoverTopology { return sentinelFailover(t, 0) }, durable: "auto",
			restart: true, follows: true},
		"cluster": {start: func(t *testing.T) failoverTopology { return clusterFailover(t, 0) }, durable: "auto",
			restart: true, follows: true},
	}
	for name, pc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			revokeDuringPartition(t, name, pc)
		})
	}
}

func revokeDuringPartition(t *testing.T, name string, pc partitionCase) {
	topo := pc.start(t)
	g := startGatewayWith(t, topo.url, partitionRedisTimeout, func(c *config.Config) { c.DurableReplicas = pc.durable })
	rs := prepareRevocations(t, g, topo, partitionRounds)
	// A session whose groups are replaced during the cut (standalone: on the primary cut off):
	// taking a group away ends an access, so it is refused as a revocation is.
	var grouped gwSession
	if topo.pick == nil {
		s, r, err := g.createSession(rs.bearer, "user-grouped")
		if err != nil {
			t.Fatalf("%v: %s", err, r)
		}
		grouped = s
		g.replicated(t)
	}
	topo.partition(t)
	if pc.restart {
		g.restart(t)
	}
	refused := 0
	out := rs.send(t, func(rv revoked, r reply) {
		refused++
		if err := r.unavailable(); err != nil {
			t.Errorf("%s during the partition: %v", rv.what, err)
		} else if r.took > partitionRedisTimeout+partitionSlack {
			t.Errorf("%s during the partition: 503 after %v, past GATEWAY_REDIS_TIMEOUT %v", rv.what, r.took, partitionRedisTimeout)
		}
	})
	if grouped.ID != "" {
		r := g.do("PUT", "/v1/sessions/"+grouped.ID+"/groups", map[string]any{"groups": []string{}}, "Authorization", rs.bearer)
		switch err := r.unavailable(); {
		case !pc.control && err != nil:
			t.Errorf("groups replaced during the partition: %v (a group taken away must survive a failover)", err)
		case pc.control && r.status != http.StatusOK:
			t.Errorf("control: groups replaced during the partition: %s, want 200", r)
		}
	}
	promoted := topo.crash(t)
	lost := lostOn(promoted, out)
	t.Logf("%s, GATEWAY_DURABLE_REPLICAS=%s: %d of %d revocations acknowledged during the partition, %d refused (503); %d of the acknowledged alive again after the failover",
		name, pc.durable, len(out), 3*partitionRounds, refused, lost)
	switch {
	case pc.control && lost == 0:
		t.Errorf("control: with durability off no revocation was lost; the test cannot see a loss")
	case !pc.control && lost != 0:
		t.Errorf("%d acknowledged revocations alive again after the failover", lost)
	}
	if !pc.follows || pc.control {
		return
	}
	// The promoted primary has no replica: once the gateway reads from it, a revocation there
	// is refused as well (auto keeps requiring the replica it has seen, across the failover).
	s := rs.byAdmin[0]
	pollUntil(t, 20*time.Second, "the gateway reads from the promoted primary", func() bool {
		r := g.do("GET", "/v1/sessions/"+s.ID, nil, "Authorization", rs.bearer)
		return r.err == nil && r.status == http.StatusOK
	})
	if r := g.do("DELETE", "/v1/sessions/"+s.ID, nil, "Authorization", rs.bearer); r.unavailable() != nil {
		t.Errorf("revoke on the promoted primary without a replica: %s; want 503", r)
	}
}
