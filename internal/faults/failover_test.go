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
}

func TestFailoverKeepsAcknowledgedRevocations(t *testing.T) {
	t.Parallel()
	topologies := map[string]func(t *testing.T) failoverTopology{
		"standalone": standaloneFailover,
		"sentinel":   sentinelFailover,
		"cluster":    clusterFailover,
	}
	for name, start := range topologies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, durable := range []string{"auto", "0"} {
				t.Run("durable="+durable, func(t *testing.T) {
					lost, acked := revokeThenCrash(t, start(t), durable)
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

func directClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func do(c rueidis.Client, args ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}

func standaloneFailover(t *testing.T) failoverTopology {
	primary := testredis.StartServer(t, "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1")
	link := testredis.StartProxy(t, primary.Addr(), failoverLinkDelay)
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(link.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := testredis.WaitLinkUp(ctx, replica.Port); err != nil {
		t.Fatal(err)
	}
	return failoverTopology{url: primary.URL(), crash: func(t *testing.T) []rueidis.Client {
		primary.Stop()
		link.Cut()
		c := directClient(t, replica.Addr())
		if err := do(c, "REPLICAOF", "NO", "ONE").Error(); err != nil {
			t.Fatalf("promote: %v", err)
		}
		return []rueidis.Client{c}
	}}
}

func sentinelFailover(t *testing.T) failoverTopology {
	set := testredis.StartSentinel(t, testredis.SentinelOptions{LinkDelay: failoverLinkDelay})
	return failoverTopology{url: set.URL(), crash: func(t *testing.T) []rueidis.Client {
		set.Primary.Stop()
		set.Link.Cut()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := set.WaitMaster(ctx, set.Replica.Addr()); err != nil {
			t.Fatal(err)
		}
		c := directClient(t, set.Replica.Addr())
		pollUntil(t, 20*time.Second, "the replica promoted", func() bool {
			r, err := do(c, "ROLE").ToArray()
			if err != nil || len(r) == 0 {
				return false
			}
			role, _ := r[0].ToString()
			return role == "master"
		})
		return []rueidis.Client{c}
	}}
}

func clusterFailover(t *testing.T) failoverTopology {
	rc := testredis.StartReplicatedCluster(t, failoverLinkDelay)
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
	}, crash: func(t *testing.T) []rueidis.Client {
		rc.Nodes[victim].Kill()
		rc.Links[victim].Cut()
		var out []rueidis.Client
		for _, r := range rc.Replicas[victim : victim+1] {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := r.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Error()
			cancel()
			if err != nil {
				t.Fatalf("cluster failover force: %v", err)
			}
			c := directClient(t, r.Addr())
			pollUntil(t, 20*time.Second, "the replica promoted", func() bool {
				role, err := do(c, "ROLE").ToArray()
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
	tenant := "t-failover"
	bearer := g.bearer(tenant, "sessions:read", "sessions:write", "tokens:read", "tokens:write")
	keep := func(string) bool { return true }
	if topo.pick != nil {
		keep = topo.pick(t, g.keys.Key("token", g.hasher.TenantTag(tenant), "anchor"))
	}
	var byAdmin, byLogout []gwSession
	var toks []tokens.Issued
	for i := 0; len(byAdmin) < failoverRounds || len(byLogout) < failoverRounds; i++ {
		s, _, err := g.createSession(bearer, fmt.Sprintf("user-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, key := g.sessionKeys(t, s); !keep(key) {
			continue
		}
		if len(byAdmin) < failoverRounds {
			byAdmin = append(byAdmin, s)
		} else {
			byLogout = append(byLogout, s)
		}
	}
	for i := range failoverRounds {
		tok, err := g.tokens.Mint(context.Background(), tokens.MintRequest{Tenant: tenant, Subject: "svc-" + strconv.Itoa(i),
			Scopes: []string{"sessions:read"}, TTL: time.Hour, TokenType: tokens.TypeService})
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	g.replicated(t)

	var (
		mu  sync.Mutex
		out []revoked
		wg  sync.WaitGroup
	)
	ack := func(r reply, want int, rv revoked) {
		mu.Lock()
		defer mu.Unlock()
		if r.err == nil && r.status == want {
			out = append(out, rv)
		} else if r.err != nil || r.status != http.StatusServiceUnavailable {
			t.Errorf("%s: %s", rv.what, r)
		}
	}
	for i := range failoverRounds {
		wg.Add(3)
		go func() {
			defer wg.Done()
			key, field := g.sessionMarker(t, byAdmin[i])
			ack(g.do("DELETE", "/v1/sessions/"+byAdmin[i].ID, nil, "Authorization", bearer), http.StatusNoContent,
				revoked{what: "revoke " + byAdmin[i].ID, key: key, field: field})
		}()
		go func() {
			defer wg.Done()
			key, field := g.sessionMarker(t, byLogout[i])
			ack(g.do("DELETE", "/v1/session", nil, "X-Session-Token", byLogout[i].Token), http.StatusNoContent,
				revoked{what: "logout " + byLogout[i].ID, key: key, field: field})
		}()
		go func() {
			defer wg.Done()
			key := g.keys.Key("token", g.hasher.TenantTag(tenant), toks[i].TokenID)
			ack(g.do("DELETE", "/v1/tokens/"+toks[i].TokenID, nil, "Authorization", bearer), http.StatusNoContent,
				revoked{what: "token revoke " + toks[i].TokenID, key: key, token: true})
		}()
	}
	wg.Wait()
	promoted := topo.crash(t)
	if durable != "0" && len(out) != 3*failoverRounds {
		t.Errorf("%d of %d revocations acknowledged; want all (the link is slow, not broken)", len(out), 3*failoverRounds)
	}
	for _, rv := range out {
		alive := false
		for _, c := range promoted {
			if rv.token {
				v, err := do(c, "HGET", rv.key, "revoked").ToString()
				alive = alive || err == nil && v != "1"
			} else if rv.field != "" {
				n, err := do(c, "HEXISTS", rv.key, rv.field).AsInt64()
				alive = alive || err == nil && n == 1
			} else {
				n, err := do(c, "EXISTS", rv.key).AsInt64()
				alive = alive || err == nil && n == 1
			}
		}
		if alive {
			lost++
		}
	}
	return lost, len(out)
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
