package faults

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// Acknowledged revocations survive a failover (issue 11). On each topology — a primary with a
// replica, a Sentinel set, a cluster of three masters with a replica each — the replication
// link runs through a proxy that holds the stream for failoverLinkDelay each way. The gateway
// revokes 50 sessions (DELETE /v1/sessions/{id}), logs out 50 (DELETE /v1/session) and
// revokes 50 tokens (DELETE /v1/tokens/{id}), all at once; right after the last answer the
// primary (every master, on the cluster) is killed with SIGKILL and the proxy drops what it
// still holds, and the replica is promoted (REPLICAOF NO ONE; Sentinel's own failover;
// CLUSTER FAILOVER FORCE). On the promoted replica no acknowledged revocation may be undone.
//
// The rounds are batched: the 150 revocations are answered, then the primary is killed once.
// Each answer precedes the crash, which is what a round needs: an acknowledged revocation must
// already be on the replica when it is acknowledged, however soon the crash follows.
//
// The control runs the same with GATEWAY_DURABLE_REPLICAS=0: then revocations come back (the
// link's delay is longer than the 150 answers take), which shows the test can see a loss.

const (
	failoverRounds    = 50
	failoverLinkDelay = 300 * time.Millisecond
)

// failoverTopology is one deployment under test.
type failoverTopology struct {
	url string
	// pick, when set, chooses the primary to crash by the slot of anchor (a key of the test's
	// tenant) and answers whether a key lives on it: on the cluster only that master is killed,
	// so the two others can vote for its replica's CLUSTER FAILOVER FORCE.
	pick func(t *testing.T, anchor string) (keep func(key string) bool)
	// crash kills the primaries, drops the links' in-flight bytes and promotes the replicas;
	// it returns direct clients to the promoted nodes.
	crash func(t *testing.T) []rueidis.Client
	// partition cuts the replication link (on the cluster, the picked master's) and waits until
	// the primary lists no replica online.
	partition func(t *testing.T)
}

func TestFailoverKeepsAcknowledgedRevocations(t *testing.T) {
	t.Parallel()
	topologies := map[string]func(t *testing.T, delay time.Duration) failoverTopology{
		"standalone": func(t *testing.T, d time.Duration) failoverTopology { return standaloneFailover(t, d) },
		"sentinel":   sentinelFailover,
		"cluster":    clusterFailover,
	}
	for name, start := range topologies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, durable := range []string{"auto", "0"} {
				t.Run("durable="+durable, func(t *testing.T) {
					lost, acked := revokeThenCrash(t, start(t, failoverLinkDelay), durable)
					t.Logf("%s, GATEWAY_DURABLE_REPLICAS=%s: %d of %d acknowledged revocations lost", name, durable, lost, acked)
					switch {
					case durable == "auto" && lost != 0:
						t.Errorf("%d acknowledged revocations came back after the failover", lost)
					case durable == "0" && lost == 0:
						t.Errorf("control: with durability off no revocation was lost; the test cannot see a loss")
					}
				})
			}
		})
	}
}

// standaloneFailover is a primary (started with primaryArgs too) and a replica replicating
// through a proxy that holds the stream for delay each way.
func standaloneFailover(t *testing.T, delay time.Duration, primaryArgs ...string) failoverTopology {
	primary := testredis.StartServer(t, append([]string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}, primaryArgs...)...)
	link := testredis.StartProxy(t, primary.Addr(), delay)
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(link.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := testredis.WaitLinkUp(ctx, replica.Port); err != nil {
		t.Fatal(err)
	}
	return failoverTopology{url: primary.URL(), partition: func(t *testing.T) {
		link.Partition()
		waitNoReplica(t, testredis.NodeClient(t, primary.Addr()))
	}, crash: func(t *testing.T) []rueidis.Client {
		primary.Stop()
		link.Cut()
		c := testredis.NodeClient(t, replica.Addr())
		if err := testredis.Do(c, "REPLICAOF", "NO", "ONE").Error(); err != nil {
			t.Fatalf("promote: %v", err)
		}
		return []rueidis.Client{c}
	}}
}

func sentinelFailover(t *testing.T, delay time.Duration) failoverTopology {
	set := testredis.StartSentinel(t, testredis.SentinelOptions{LinkDelay: delay})
	return failoverTopology{url: set.URL(), partition: func(t *testing.T) {
		set.Link.Partition()
		waitNoReplica(t, testredis.NodeClient(t, set.Primary.Addr()))
	}, crash: func(t *testing.T) []rueidis.Client {
		set.Primary.Stop()
		set.Link.Cut()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := set.WaitMaster(ctx, set.Replica.Addr()); err != nil {
			t.Fatal(err)
		}
		c := testredis.NodeClient(t, set.Replica.Addr())
		pollUntil(t, 20*time.Second, "the replica promoted", func() bool {
			r, err := testredis.Do(c, "ROLE").ToArray()
			if err != nil || len(r) == 0 {
				return false
			}
			role, _ := r[0].ToString()
			return role == "master"
		})
		return []rueidis.Client{c}
	}}
}

func clusterFailover(t *testing.T, delay time.Duration) failoverTopology {
	rc := testredis.StartReplicatedCluster(t, delay)
	victim := -1
	owner := func(t *testing.T, key string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		slot, err := rc.KeySlot(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		o, err := rc.Owner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	return failoverTopology{url: rc.URL(), pick: func(t *testing.T, anchor string) func(string) bool {
		victim = owner(t, anchor)
		return func(key string) bool { return owner(t, key) == victim }
	}, partition: func(t *testing.T) {
		rc.Links[victim].Partition()
		waitNoReplica(t, testredis.NodeClient(t, rc.Nodes[victim].Addr()))
	}, crash: func(t *testing.T) []rueidis.Client {
		rc.Nodes[victim].Kill()
		rc.Links[victim].Cut()
		var out []rueidis.Client
		for _, r := range rc.Replicas[victim : victim+1] {
			c := testredis.NodeClient(t, r.Addr())
			// A manual failover gives up after 5 s without the masters' votes (a loaded machine):
			// it is asked again then.
			var asked time.Time
			pollUntil(t, 30*time.Second, "the replica promoted", func() bool {
				if time.Since(asked) > 5*time.Second {
					asked = time.Now()
					if err := testredis.Do(c, "CLUSTER", "FAILOVER", "FORCE").Error(); err != nil {
						t.Fatalf("cluster failover force: %v", err)
					}
				}
				role, err := testredis.Do(c, "ROLE").ToArray()
				if err != nil || len(role) == 0 {
					return false
				}
				s, _ := role[0].ToString()
				return s == "master"
			})
			out = append(out, c)
		}
		return out
	}}
}

// waitNoReplica polls the primary c until its ROLE lists no replica online.
func waitNoReplica(t *testing.T, c rueidis.Client) {
	t.Helper()
	pollUntil(t, 10*time.Second, "the primary lost sight of its replica", func() bool {
		r, err := testredis.Do(c, "ROLE").ToArray()
		if err != nil || len(r) < 3 {
			return false
		}
		reps, err := r[2].ToArray()
		return err == nil && len(reps) == 0
	})
}

// revoked is one acknowledged revocation and the key that must show it on the new primary.
type revoked struct {
	what, key string
	field     string // per-user layout: the session's field that must be gone
	token     bool   // the token hash must hold revoked=1; a session key must be gone
}

// revokeThenCrash runs the rounds on a fresh deployment and returns how many acknowledged
// revocations the promoted replicas lost, and how many were acknowledged.
func revokeThenCrash(t *testing.T, topo failoverTopology, durable string) (lost, acked int) {
	g := startGatewayWith(t, topo.url, 2*time.Second, func(c *config.Config) {
		c.DurableReplicas, c.DurableTimeout = durable, 5*time.Second
	})
	rs := prepareRevocations(t, g, topo, failoverRounds)
	out := rs.send(t, func(rv revoked, r reply) {
		if r.err != nil || r.status != http.StatusServiceUnavailable {
			t.Errorf("%s: %s", rv.what, r)
		}
	})
	promoted := topo.crash(t)
	if durable != "0" && len(out) != 3*failoverRounds {
		t.Errorf("%d of %d revocations acknowledged; want all (the link is slow, not broken)", len(out), 3*failoverRounds)
	}
	return lostOn(promoted, out), len(out)
}

// revocations are the sessions and tokens of one round, created and replicated.
type revocations struct {
	g                 *gateway
	tenant, bearer    string
	byAdmin, byLogout []gwSession
	toks              []tokens.Issued
}

// prepareRevocations creates n sessions to revoke by id, n to log out and n tokens to revoke
// (on the cluster, all on the master topo picks), and waits until the replicas hold them.
func prepareRevocations(t *testing.T, g *gateway, topo failoverTopology, n int) *revocations {
	t.Helper()
	rs := &revocations{g: g, tenant: "t-failover"}
	rs.bearer = g.bearer(rs.tenant, "sessions:read", "sessions:write", "tokens:read", "tokens:write", "tokens:admin")
	keep := func(string) bool { return true }
	if topo.pick != nil {
		keep = topo.pick(t, g.keys.Key("token", g.hasher.TenantTag(rs.tenant), "anchor"))
	}
	for i := 0; len(rs.byAdmin) < n || len(rs.byLogout) < n; i++ {
		s, _, err := g.createSession(rs.bearer, fmt.Sprintf("user-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, key := g.sessionKeys(t, s); !keep(key) {
			continue
		}
		if len(rs.byAdmin) < n {
			rs.byAdmin = append(rs.byAdmin, s)
		} else {
			rs.byLogout = append(rs.byLogout, s)
		}
	}
	for i := range n {
		tok, err := g.tokens.Mint(context.Background(), tokens.MintRequest{Tenant: rs.tenant, Subject: "svc-" + strconv.Itoa(i),
			Scopes: []string{"sessions:read"}, TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		rs.toks = append(rs.toks, tok)
	}
	g.replicated(t)
	return rs
}

// send revokes every session by id (DELETE /v1/sessions/{id}), logs out every other
// (DELETE /v1/session) and revokes every token (DELETE /v1/tokens/{id}), all at once, through
// the gateway rs.g (which may have been restarted since prepareRevocations). It returns the
// acknowledged revocations (204) and hands every other answer to refused.
func (rs *revocations) send(t *testing.T, refused func(rv revoked, r reply)) []revoked {
	g := rs.g
	var (
		mu  sync.Mutex
		out []revoked
		wg  sync.WaitGroup
	)
	ack := func(r reply, rv revoked) {
		mu.Lock()
		defer mu.Unlock()
		if r.err == nil && r.status == http.StatusNoContent {
			out = append(out, rv)
		} else {
			refused(rv, r)
		}
	}
	for i := range rs.byAdmin {
		wg.Add(3)
		go func() {
			defer wg.Done()
			key, field := g.sessionMarker(t, rs.byAdmin[i])
			ack(g.do("DELETE", "/v1/sessions/"+rs.byAdmin[i].ID, nil, "Authorization", rs.bearer),
				revoked{what: "revoke " + rs.byAdmin[i].ID, key: key, field: field})
		}()
		go func() {
			defer wg.Done()
			key, field := g.sessionMarker(t, rs.byLogout[i])
			ack(g.do("DELETE", "/v1/session", nil, "X-Session-Token", rs.byLogout[i].Token),
				revoked{what: "logout " + rs.byLogout[i].ID, key: key, field: field})
		}()
		go func() {
			defer wg.Done()
			key := g.keys.Key("token", g.hasher.TenantTag(rs.tenant), rs.toks[i].TokenID)
			ack(g.do("DELETE", "/v1/tokens/"+rs.toks[i].TokenID, nil, "Authorization", rs.bearer),
				revoked{what: "token revoke " + rs.toks[i].TokenID, key: key, token: true})
		}()
	}
	wg.Wait()
	return out
}

// lostOn counts the acknowledged revocations out that the promoted nodes do not show: a
// session still there, a token not marked revoked.
func lostOn(promoted []rueidis.Client, out []revoked) (lost int) {
	for _, rv := range out {
		alive := false
		for _, c := range promoted {
			if rv.token {
				v, err := testredis.Do(c, "HGET", rv.key, "revoked").ToString()
				alive = alive || err == nil && v != "1"
			} else if rv.field != "" {
				n, err := testredis.Do(c, "HEXISTS", rv.key, rv.field).AsInt64()
				alive = alive || err == nil && n == 1
			} else {
				n, err := testredis.Do(c, "EXISTS", rv.key).AsInt64()
				alive = alive || err == nil && n == 1
			}
		}
		if alive {
			lost++
		}
	}
	return lost
}

// replicated waits until every replica holds every write made so far: a WAIT on each primary
// from a connection that just wrote there (the setup's creations must not be what is lost).
func (g *gateway) replicated(t *testing.T) {
	t.Helper()
	for addr, n := range g.store.Client.Nodes() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if role, err := n.Do(ctx, n.B().Role().Build()).ToArray(); err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r != "master" {
				cancel()
				continue
			}
		}
		err := n.Dedicated(func(c rueidis.DedicatedClient) error {
			// A key this node serves (on a cluster, the first of the tags whose slot it owns).
			for i := 0; ; i++ {
				key := g.keys.Key("durable", "setup"+strconv.Itoa(i))
				err := c.Do(ctx, c.B().Set().Key(key).Value("1").Px(time.Second).Build()).Error()
				if re, ok := rueidis.IsRedisErr(err); ok && i < 10000 {
					if _, moved := re.IsMoved(); moved {
						continue
					}
				}
				if err != nil {
					return err
				}
				break
			}
			n, err := c.Do(ctx, c.B().Wait().Numreplicas(1).Timeout(15000).Build()).AsInt64()
			if err == nil && n < 1 {
				err = fmt.Errorf("no replica acknowledged")
			}
			return err
		})
		cancel()
		if err != nil {
			t.Fatalf("setup replicated on %s: %v", addr, err)
		}
	}
}
