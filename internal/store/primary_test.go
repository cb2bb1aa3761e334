package store_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/telemetry/redistrace"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Sessions are read from the primary, never from replicas (BRIEF §4): a replica may lag, so a
// revoked or rotated session could still be served from it.
//
// These tests run real replicas. The store is opened the way cmd/gateway opens it (store.Open
// with the rueidisotel client from redistrace.NewClient), against a private primary with
// a replica, and against a private cluster whose every master has a replica — the topology
// production is pointed at with a seed list, where rueidis learns the replicas from CLUSTER
// SHARDS and would route read-only commands to them if SendToReplicas (or ReplicaOnly) were
// set. Session-style reads (HMGET through DoCache and Do, the HMGET+PTTL+EXISTS pipeline of a
// session view, the device index ZRANGE) then run, with client-side caching on and off, and
// INFO commandstats on every node proves that the replicas received none of them while the
// primaries served them.
//
// Each test also opens a "misrouted" control store whose client sends reads to replicas, and
// checks the replicas do see those reads: the measurement can tell the two apart, so the test
// cannot pass merely because the replicas are invisible.

// sessionReadCmds are the commands a session read sends.
var sessionReadCmds = []string{"hmget", "pttl", "exists", "zrange"}

// sessionReads runs session-style reads for each key tag through c: the cached HMGET of
// Authorize (twice, so a cache hit is exercised when caching is on), a plain HMGET, the
// HMGET+PTTL+EXISTS pipeline of a session view and the ZRANGE of the device index.
func sessionReads(t *testing.T, c rueidis.Client, prefix string, tags []string) {
	t.Helper()
	ctx := context.Background()
	for _, tag := range tags {
		sess := prefix + ":v1:sess:{" + tag + "}:ref"
		chal := prefix + ":v1:mfa:{" + tag + "}:ref"
		devs := prefix + ":v1:devices:{" + tag + "}"
		for range 2 {
			if err := c.DoCache(ctx, c.B().Hmget().Key(sess).Field("status", "authLevel", "absoluteExpiresAtMs").Cache(), time.Minute).Error(); err != nil {
				t.Fatalf("cached HMGET %s: %v", tag, err)
			}
		}
		if err := c.Do(ctx, c.B().Hmget().Key(sess).Field("status", "userTag").Build()).Error(); err != nil {
			t.Fatalf("HMGET %s: %v", tag, err)
		}
		for _, r := range c.DoMulti(ctx,
			c.B().Hmget().Key(sess).Field("status", "createdAtMs").Build(),
			c.B().Pttl().Key(sess).Build(),
			c.B().Exists().Key(chal).Build(),
		) {
			if err := r.Error(); err != nil {
				t.Fatalf("view pipeline %s: %v", tag, err)
			}
		}
		if err := c.Do(ctx, c.B().Zrange().Key(devs).Min("0").Max("-1").Build()).Error(); err != nil {
			t.Fatalf("ZRANGE %s: %v", tag, err)
		}
	}
}

// seedSessions writes one session hash and device index per tag (with TTLs) through c.
func seedSessions(t *testing.T, c rueidis.Client, prefix string, tags []string) {
	t.Helper()
	ctx := context.Background()
	for _, tag := range tags {
		sess := prefix + ":v1:sess:{" + tag + "}:ref"
		devs := prefix + ":v1:devices:{" + tag + "}"
		for _, r := range c.DoMulti(ctx,
			c.B().Multi().Build(),
			c.B().Hset().Key(sess).FieldValue().FieldValue("status", "ACTIVE").FieldValue("authLevel", "PASSWORD").
				FieldValue("absoluteExpiresAtMs", "9999999999999").FieldValue("createdAtMs", "1").FieldValue("userTag", tag).Build(),
			c.B().Expire().Key(sess).Seconds(300).Build(),
			c.B().Zadd().Key(devs).ScoreMember().ScoreMember(1, "ref").Build(),
			c.B().Expire().Key(devs).Seconds(300).Build(),
			c.B().Exec().Build(),
		) {
			if err := r.Error(); err != nil {
				t.Fatalf("seed %s: %v", tag, err)
			}
		}
	}
}

// node is one Redis process the test inspects through its own direct connection.
type node struct {
	name  string
	admin rueidis.Client
}

func dialNode(t *testing.T, name, addr string) node {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return node{name: name, admin: c}
}

func (n node) do(t *testing.T, args ...string) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.admin.Do(ctx, n.admin.B().Arbitrary(args...).Build())
}

// sessionReadCount is how many session read commands reached n (calls, plus calls refused as
// a redirection or failed: any arrival counts), from INFO commandstats.
func (n node) sessionReadCount(t *testing.T) int64 {
	t.Helper()
	info, err := n.do(t, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("%s: INFO commandstats: %v", n.name, err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		for _, cmd := range sessionReadCmds {
			stats, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(stats, ",") {
				k, v, _ := strings.Cut(kv, "=")
				if k == "calls" || k == "rejected_calls" || k == "failed_calls" {
					x, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("%s: commandstats %q: %v", n.name, line, err)
					}
					total += x
				}
			}
		}
	}
	return total
}

func sumReads(t *testing.T, nodes []node) int64 {
	t.Helper()
	var n int64
	for _, x := range nodes {
		n += x.sessionReadCount(t)
	}
	return n
}

// openLikeProduction opens the store as cmd/gateway does (rueidisotel client, caching per
// cacheOn); misroute, when set, edits the client options first (the control).
func openLikeProduction(t *testing.T, url string, cacheOn bool, misroute func(*rueidis.ClientOption)) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Options{
		URL: url, Timeout: 2 * time.Second, DisableCache: !cacheOn,
		NewClient: func(o rueidis.ClientOption) (rueidis.Client, error) {
			if misroute != nil {
				misroute(&o)
			}
			return redistrace.NewClient(o, nil)
		},
	})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(s.Close)
	return s
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var why string
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = cond(); ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s", what, why)
}

func linkUp(t *testing.T, replica node) (bool, string) {
	info, err := replica.do(t, "INFO", "replication").ToString()
	if err != nil {
		return false, err.Error()
	}
	if !strings.Contains(info, "master_link_status:up") {
		return false, replica.name + ": replication link not up"
	}
	return true, ""
}

// assertPrimaryOnly runs the reads through s and checks that the primaries' session read
// counts rose by at least want and the replicas' did not move.
func assertPrimaryOnly(t *testing.T, s *store.Store, prefix string, tags []string, primaries, replicas []node, want int64) {
	t.Helper()
	p0, r0 := sumReads(t, primaries), sumReads(t, replicas)
	sessionReads(t, s.Client, prefix, tags)
	p1, r1 := sumReads(t, primaries), sumReads(t, replicas)
	if r1 != r0 {
		t.Errorf("replicas received %d session read commands, want 0", r1-r0)
	}
	if p1-p0 < want {
		t.Errorf("primaries served %d session read commands, want at least %d", p1-p0, want)
	}
}

// assertControlHitsReplicas checks that a store whose client does send reads to replicas is
// seen doing so: the replicas' counts rise.
func assertControlHitsReplicas(t *testing.T, s *store.Store, prefix string, tags []string, replicas []node) {
	t.Helper()
	r0 := sumReads(t, replicas)
	sessionReads(t, s.Client, prefix, tags)
	if r1 := sumReads(t, replicas); r1 == r0 {
		t.Fatal("control: a client with SendToReplicas sent no read to a replica; the test cannot tell primary reads from replica reads")
	}
}

// A standalone store knows only the address in REDIS_URL: rueidis talks to a replica only when
// given Standalone.ReplicaAddress with SendToReplicas, which the URL cannot express. This test
// pins that (it fails should the store ever be given a replica address and a read route to it);
// the cluster test below is the one where SendToReplicas or ReplicaOnly alone would misroute.
func TestSessionReadsGoToPrimaryStandalone(t *testing.T) {
	t.Parallel()
	primary := testredis.StartServer(t, "--repl-diskless-sync-delay", "0")
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	pn := dialNode(t, "primary", fmt.Sprintf("127.0.0.1:%d", primary.Port))
	rn := dialNode(t, "replica", fmt.Sprintf("127.0.0.1:%d", replica.Port))
	waitFor(t, "replica sync", func() (bool, string) { return linkUp(t, rn) })

	prefix := testredis.Prefix(t)
	tags := []string{"u1", "u2", "u3"}
	seedSessions(t, openLikeProduction(t, primary.URL(), false, nil).Client, prefix, tags)
	for _, cacheOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cacheOn), func(t *testing.T) {
			s := openLikeProduction(t, primary.URL(), cacheOn, nil)
			// Per tag: one cached HMGET (the second is a cache hit) or two uncached, one
			// HMGET, the 3-command pipeline and one ZRANGE.
			want := int64(len(tags) * 6)
			if !cacheOn {
				want = int64(len(tags) * 7)
			}
			assertPrimaryOnly(t, s, prefix, tags, []node{pn}, []node{rn}, want)
		})
	}
	// The control: a standalone client told about the replica and asked to read from it.
	ctl := openLikeProduction(t, primary.URL(), false, func(o *rueidis.ClientOption) {
		o.Standalone.ReplicaAddress = []string{fmt.Sprintf("127.0.0.1:%d", replica.Port)}
		o.SendToReplicas = func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }
	})
	assertControlHitsReplicas(t, ctl, prefix, tags, []node{rn})
}

func TestSessionReadsGoToPrimaryCluster(t *testing.T) {
	t.Parallel()
	c := testredis.StartCluster(t)
	var primaries, replicas []node
	for i, m := range c.Nodes {
		n := dialNode(t, fmt.Sprintf("master %d", i), m.Addr())
		// Start the replicas' full sync at once rather than after the default 5 s wait, and
		// ping them every second: a replica shows as online in CLUSTER SHARDS (so rueidis
		// learns it) only once its replication offset moved, which a ping does.
		if err := n.do(t, "CONFIG", "SET", "repl-diskless-sync-delay", "0", "repl-ping-replica-period", "1").Error(); err != nil {
			t.Fatal(err)
		}
		primaries = append(primaries, n)
	}
	for i, m := range c.Nodes {
		r := startClusterReplica(t, fmt.Sprintf("replica of %d", i))
		if err := r.do(t, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(m.Port), strconv.Itoa(m.BusPort)).Error(); err != nil {
			t.Fatalf("meet: %v", err)
		}
		waitFor(t, r.name+" replicate", func() (bool, string) {
			if err := r.do(t, "CLUSTER", "REPLICATE", m.ID).Error(); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		waitFor(t, r.name+" sync", func() (bool, string) { return linkUp(t, r) })
	}
	// Every node must list every shard with its master and replica online, as rueidis reads
	// the topology (CLUSTER SHARDS) from whichever node it asks.
	for _, n := range append(append([]node{}, primaries...), replicas...) {
		waitFor(t, n.name+" topology", func() (bool, string) { return shardsOnline(t, n) })
	}

	prefix := testredis.Prefix(t)
	// Enough tags that every shard owns some of them.
	var tags []string
	owners := map[int]bool{}
	ctx := context.Background()
	for i := 0; len(owners) < len(c.Nodes) || len(tags) < 6; i++ {
		tag := "u" + strconv.Itoa(i)
		slot, err := c.KeySlot(ctx, "{"+tag+"}")
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.Owner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		owners[o] = true
		tags = append(tags, tag)
	}
	seedSessions(t, openLikeProduction(t, c.URL(), false, nil).Client, prefix, tags)
	for _, r := range replicas {
		waitFor(t, r.name+" caught up", func() (bool, string) {
			n, err := r.do(t, "DBSIZE").AsInt64()
			if err != nil {
				return false, err.Error()
			}
			return n > 0, "replica holds no key yet"
		})
	}
	for _, cacheOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cacheOn), func(t *testing.T) {
			s := openLikeProduction(t, c.URL(), cacheOn, nil)
			if s.Caps.Topology != store.Cluster {
				t.Fatalf("topology %q, want cluster", s.Caps.Topology)
			}
			want := int64(len(tags) * 6)
			if !cacheOn {
				want = int64(len(tags) * 7)
			}
			assertPrimaryOnly(t, s, prefix, tags, primaries, replicas, want)
		})
	}
	ctl := openLikeProduction(t, c.URL(), false, func(o *rueidis.ClientOption) {
		o.SendToReplicas = func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }
	})
	assertControlHitsReplicas(t, ctl, prefix, tags, replicas)
}

// startClusterReplica starts a cluster-enabled Redis 8 on free ports (killed at cleanup) and
// returns a direct connection to it.
func startClusterReplica(t *testing.T, name string) node {
	t.Helper()
	return dialNode(t, name, testredis.StartClusterNode(t).Addr())
}

// shardsOnline reports whether n's CLUSTER SHARDS lists three shards, each with a master and
// a replica whose health is online.
func shardsOnline(t *testing.T, n node) (bool, string) {
	shards, err := n.do(t, "CLUSTER", "SHARDS").ToArray()
	if err != nil {
		return false, err.Error()
	}
	withReplica := 0
	for _, sh := range shards {
		m, err := sh.AsMap()
		if err != nil {
			return false, err.Error()
		}
		nm := m["nodes"]
		nodes, err := nm.ToArray()
		if err != nil {
			return false, err.Error()
		}
		roles := map[string]int{}
		for _, x := range nodes {
			d, err := x.AsMap()
			if err != nil {
				return false, err.Error()
			}
			r, h := d["role"], d["health"]
			role, _ := r.ToString()
			health, _ := h.ToString()
			if health == "online" {
				roles[role]++
			}
		}
		if roles["master"] == 1 && roles["replica"] >= 1 {
			withReplica++
		}
	}
	if withReplica != 3 {
		return false, fmt.Sprintf("%s sees %d of 3 shards with an online master and replica", n.name, withReplica)
	}
	return true, ""
}
