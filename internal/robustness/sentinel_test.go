package robustness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// A Sentinel deployment: a primary and a replica, three Sentinels with a quorum of two, and
// the gateways configured with the Sentinels' addresses (REDIS_URL ...?master_set=hg), so a
// failover is the Sentinels' own: they notice the primary gone, elect a leader, promote the
// replica, and the gateways follow (rueidis' +switch-master subscription and its topology
// refresh).
//
// Every node — both Redis servers and the Sentinels — is reached only through a
// testredis.Proxy of its own, and every process connects from a loopback address of its own
// (Redis' bind-source-addr; the in-process gateways' dialer, fromAddress), so a proxy can cut
// the connections of some sources and not others: a network partition between any two sets
// of processes, with no firewall. The servers announce their proxies (replica-announce-*,
// sentinel announce-*), so whatever address a Sentinel or a gateway learns is a proxy's.

const masterSet = "hg"

// The loopback addresses the processes connect from.
var (
	serverIPs = [2]string{"127.0.0.2", "127.0.0.3"}
)

func sentinelIP(i int) string { return "127.0.0." + strconv.Itoa(11+i) }
func gatewayIP(i int) string  { return "127.0.0." + strconv.Itoa(21+i) }

// sentinelDownAfter is the Sentinels' down-after-milliseconds: longer than a tenth of the
// longest partition before a failover (a replica cut off for more than ten times it is not
// promoted), short enough for a failover within a short run.
const sentinelDownAfter = time.Second

// sentinels are the Sentinel processes of a deployment, their proxies, and each Redis
// server's proxy and source address.
type sentinels struct {
	t       *testing.T
	ports   []int
	proxies []*testredis.Proxy
	clients []rueidis.Client // to each Sentinel directly
	// proxy and ip of each Redis server (keyed by the server, whose role changes).
	proxy map[*testredis.Server]*testredis.Proxy
	ip    map[*testredis.Server]string
	nodes map[*testredis.Server]rueidis.Client // to each server directly, made once
}

// node is a client to srv directly (no proxy), made on first use.
func (s *sentinels) node(srv *testredis.Server) rueidis.Client {
	if s.nodes[srv] == nil {
		s.nodes[srv] = testredis.NodeClient(s.t, srv.Addr())
	}
	return s.nodes[srv]
}

// startSentinelDeployment starts both servers (with extra), the three Sentinels and every
// proxy, and waits until every Sentinel knows the primary, the replica and the two others and
// the replica is in sync.
func startSentinelDeployment(t *testing.T, extra ...string) *deployment {
	t.Helper()
	if testredisUnset(t) {
		t.Skipf("%s is unset (run `make test`)", testredis.EnvRedis8Server)
	}
	bin := os.Getenv(testredis.EnvRedis8Server)
	s := &sentinels{t: t, proxy: map[*testredis.Server]*testredis.Proxy{}, ip: map[*testredis.Server]string{},
		nodes: map[*testredis.Server]rueidis.Client{}}
	d := &deployment{t: t, sentinels: s}
	var servers [2]*testredis.Server
	for i := range servers {
		px := testredis.StartProxy(t, "127.0.0.1:1", 0) // retargeted once the server has a port
		args := append(append([]string(nil), redisArgs...), extra...)
		args = append(args, "--bind-source-addr", serverIPs[i],
			"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", strconv.Itoa(px.Port))
		if i == 1 {
			args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(s.proxy[servers[0]].Port))
		}
		servers[i] = testredis.StartServer(t, args...)
		px.Retarget(servers[i].Addr())
		s.proxy[servers[i]], s.ip[servers[i]] = px, serverIPs[i]
	}
	d.primary, d.replica = servers[0], servers[1]
	for i := range 3 {
		s.start(bin, i, s.proxy[d.primary].Port)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.waitKnown(ctx); err != nil {
		t.Fatal(err)
	}
	d.waitInSync()
	return d
}

// start runs Sentinel i behind a proxy of its own, monitoring the primary at its proxy's port.
// A port found free may be taken before the Sentinel binds it: it starts again on another.
func (s *sentinels) start(bin string, i, primaryPort int) {
	t := s.t
	for attempt := 1; ; attempt++ {
		port, px, cmd := s.launch(bin, i, primaryPort)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := testredis.WaitOwn(ctx, port, cmd)
		cancel()
		if err == nil {
			s.ports, s.proxies = append(s.ports, port), append(s.proxies, px)
			s.clients = append(s.clients, testredis.NodeClient(t, addr))
			return
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		px.Close()
		if !testredis.PortTaken(err) || attempt == 3 {
			t.Fatalf("sentinel on %s: %v", addr, err)
		}
	}
}

// launch starts Sentinel i's process on a free port behind a new proxy.
func (s *sentinels) launch(bin string, i, primaryPort int) (int, *testredis.Proxy, *exec.Cmd) {
	t := s.t
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	px := testredis.StartProxy(t, "127.0.0.1:"+strconv.Itoa(port), 0)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nbind-source-addr %s\n"+
		"sentinel announce-ip 127.0.0.1\nsentinel announce-port %d\n"+
		"sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s 4000\n"+
		"sentinel parallel-syncs %s 1\n",
		port, dir, sentinelIP(i), px.Port, masterSet, primaryPort, masterSet, sentinelDownAfter.Milliseconds(), masterSet, masterSet)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel", "--daemonize", "no", "--logfile", "")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sentinel: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return port, px, cmd
}

// url is the gateways' REDIS_URL: the Sentinels' proxies and the master set.
func (s *sentinels) url() string {
	addrs := make([]string, len(s.proxies))
	for i, p := range s.proxies {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p.Port)
	}
	return "redis://" + strings.Join(addrs, ",") + "?master_set=" + masterSet
}

// ask sends one command to Sentinel i (directly, not through its proxy).
func (s *sentinels) ask(i int, args ...string) ([]string, error) {
	return testredis.Do(s.clients[i], args...).AsStrSlice()
}

// waitKnown waits until every Sentinel sees one replica and the two other Sentinels.
func (s *sentinels) waitKnown(ctx context.Context) error {
	var why string
	for ctx.Err() == nil {
		why = ""
		for i := range s.ports {
			m, err := testredis.Do(s.clients[i], "SENTINEL", "MASTER", masterSet).AsStrMap()
			switch {
			case err != nil:
				why = err.Error()
			case m["num-slaves"] != "1" || m["num-other-sentinels"] != "2":
				why = fmt.Sprintf("sentinel %d: %s replicas, %s other sentinels", i, m["num-slaves"], m["num-other-sentinels"])
			}
		}
		if why == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("sentinels not ready: %s", why)
}

// waitMaster waits until the Sentinels which (indexes) name srv's proxy as the primary.
func (d *deployment) waitMaster(srv *testredis.Server, within time.Duration, which ...int) error {
	s := d.sentinels
	want := strconv.Itoa(s.proxy[srv].Port)
	return poll(within, "sentinels "+fmt.Sprint(which)+" name "+srv.Addr()+" the primary", func() bool {
		for _, i := range which {
			r, err := s.ask(i, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterSet)
			if err != nil || len(r) != 2 || r[1] != want {
				return false
			}
		}
		return true
	})
}

// allSentinels is every Sentinel's index.
var allSentinels = []int{0, 1, 2}

// sentinelFailover waits for the Sentinels (which) to promote the replica, then swaps the
// roles: the old primary is dead or cut off.
func (d *deployment) sentinelFailover(which ...int) error {
	if err := d.waitMaster(d.replica, 30*time.Second, which...); err != nil {
		return err
	}
	d.primary, d.replica = d.replica, d.primary
	return nil
}

// sentinelRejoin restarts the crashed server and makes it a replica of the promoted one (as
// the Sentinels would, sooner), then waits until every Sentinel agrees and its link is up.
func (d *deployment) sentinelRejoin() error {
	s := d.sentinels
	d.replica.Start()
	c := testredis.NodeClient(d.t, d.replica.Addr())
	port := strconv.Itoa(s.proxy[d.primary].Port)
	var err error
	if perr := poll(30*time.Second, "the crashed primary rejoins", func() bool {
		err = testredis.Do(c, "REPLICAOF", "127.0.0.1", port).Error()
		return err == nil
	}); perr != nil {
		return fmt.Errorf("rejoin: %w (%w)", perr, err)
	}
	return d.sentinelWhole(nil)
}

// sentinelWhole waits until the deployment is settled: every Sentinel names the same primary
// and the other server replicates from it with its link up (after a split the Sentinels may
// pass through several primaries before they settle, and may settle on the one the failover
// replaced: faultCounts.Reverted). It takes that primary as the deployment's; on failure it
// says what each Sentinel and each server report.
func (d *deployment) sentinelWhole(n *faultCounts) error {
	s := d.sentinels
	was := d.primary
	err := poll(2*time.Minute, "the Sentinels settle on a primary and its replica's link is up", func() bool {
		var agreed *testredis.Server
		for i := range s.ports {
			r, err := s.ask(i, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterSet)
			if err != nil || len(r) != 2 {
				return false
			}
			var named *testredis.Server
			for srv, px := range s.proxy {
				if strconv.Itoa(px.Port) == r[1] {
					named = srv
				}
			}
			if named == nil || agreed != nil && named != agreed {
				return false
			}
			agreed = named
		}
		other := d.primary
		if agreed == d.primary {
			other = d.replica
		}
		info, err := testredis.Do(s.node(other), "INFO", "replication").ToString()
		if err != nil || !strings.Contains(info, "master_link_status:up") || infoInt(info, "master_port") != int64(s.proxy[agreed].Port) {
			return false
		}
		d.primary, d.replica = agreed, other
		return true
	})
	if err == nil && n != nil && d.primary != was {
		n.Reverted++
	}
	if err != nil {
		for i := range s.ports {
			m, _ := testredis.Do(s.clients[i], "SENTINEL", "MASTER", masterSet).AsStrMap()
			err = fmt.Errorf("%w; sentinel %d: master port %s flags %s epoch %s", err, i, m["port"], m["flags"], m["config-epoch"])
		}
		for srv, px := range s.proxy {
			info, _ := testredis.Do(s.node(srv), "INFO", "replication").ToString()
			err = fmt.Errorf("%w; server behind proxy %d: %s", err, px.Port, strings.ReplaceAll(tail(info, 300), "\r\n", " "))
		}
	}
	return err
}

// split partitions the deployment in two: the processes of minority (source addresses)
// with the nodes of minorityNodes, the rest with the other nodes. Each node's proxy refuses
// the other side's sources.
func (d *deployment) split(minorityNodes []*testredis.Proxy, minority []string) {
	s := d.sentinels
	all := append([]string{serverIPs[0], serverIPs[1]}, gatewayIPs(len(d.gateways))...)
	for i := range s.proxies {
		all = append(all, sentinelIP(i))
	}
	var majority []string
	for _, ip := range all {
		if !slices.Contains(minority, ip) {
			majority = append(majority, ip)
		}
	}
	for _, px := range append(append([]*testredis.Proxy{}, s.proxies...), s.proxy[d.primary], s.proxy[d.replica]) {
		if slices.Contains(minorityNodes, px) {
			px.Block(majority...)
		} else {
			px.Block(minority...)
		}
	}
}

// heal ends every partition of the deployment.
func (d *deployment) heal() {
	s := d.sentinels
	for _, px := range append(append([]*testredis.Proxy{}, s.proxies...), s.proxy[d.primary], s.proxy[d.replica]) {
		px.Heal()
	}
}

func gatewayIPs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = gatewayIP(i)
	}
	return out
}

// The Sentinel deployment's faults (see faults_test.go for the cycle's shape).
func init() {
	// sentinel-crash: a quarter into the cycle the primary is killed (SIGKILL); the Sentinels
	// notice (down-after), agree and promote the replica; the gateways follow them. The old
	// primary rejoins as a replica at three quarters.
	faults["sentinel-crash"] = fault{name: "sentinel-crash", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/4) {
			return nil
		}
		defer n.span()()
		d.primary.Stop()
		d.sentinels.proxy[d.primary].Cut()
		if err := d.sentinelFailover(allSentinels...); err != nil {
			return err
		}
		n.Failovers++
		if !sleep(ctx, p/2) {
			return nil
		}
		return d.sentinelRejoin()
	}}
	// sentinel-partition: a fifth into the cycle the replication link is cut (the primary's
	// proxy refuses the replica's address); the gateways keep writing to the primary; at 45%
	// the primary is killed and the Sentinels promote the cut-off replica; the old primary
	// rejoins at three quarters.
	faults["sentinel-partition"] = fault{name: "sentinel-partition", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		s := d.sentinels
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{time.Now(), time.Now().Add(p)})
		s.proxy[d.primary].Block(s.ip[d.replica])
		if err := d.waitNoReplica(); err != nil {
			return err
		}
		n.Partitions++
		if !sleep(ctx, p/4) {
			return nil
		}
		d.primary.Stop()
		s.proxy[d.primary].Heal()
		s.proxy[d.primary].Cut()
		if err := d.sentinelFailover(allSentinels...); err != nil {
			return err
		}
		n.Cuts[cut][1] = time.Now()
		n.Failovers++
		if !sleep(ctx, 3*p/10) {
			return nil
		}
		return d.sentinelRejoin()
	}}
	// sentinel-split, Jepsen's scenario: a fifth into the cycle the network splits in two. On
	// the minority side the primary, one Sentinel and the last gateway replica, which keeps
	// writing to that primary (its Sentinel still names it); on the majority side the replica,
	// two Sentinels and the other gateways. The majority's Sentinels promote the replica. At
	// three fifths the network heals and the Sentinels turn the old primary into a replica of
	// the new one (which discards whatever it took during the split); the minority's gateway
	// follows them.
	faults["sentinel-split"] = fault{name: "sentinel-split", cycle: func(ctx context.Context, d *deployment, p time.Duration, n *faultCounts) error {
		if !sleep(ctx, p/5) {
			return nil
		}
		defer n.span()()
		s := d.sentinels
		at := time.Now()
		cut := len(n.Cuts)
		n.Cuts = append(n.Cuts, [2]time.Time{at, at.Add(p)})
		minority := []string{s.ip[d.primary], sentinelIP(2), gatewayIP(len(d.gateways) - 1)}
		d.split([]*testredis.Proxy{s.proxy[d.primary], s.proxies[2]}, minority)
		n.Partitions++
		err := d.sentinelFailover(0, 1)
		if err == nil {
			n.Failovers++
			sleep(ctx, 2*p/5-time.Since(at))
		}
		d.heal()
		if err == nil {
			err = d.sentinelWhole(n)
		}
		n.Cuts[cut][1] = time.Now()
		return err
	}}
}

// waitNoReplica waits until the primary lists no replica online.
func (d *deployment) waitNoReplica() error {
	c := testredis.NodeClient(d.t, d.primary.Addr())
	return poll(10*time.Second, "the primary lost sight of its replica", func() bool {
		r, err := testredis.Do(c, "ROLE").ToArray()
		if err != nil || len(r) < 3 {
			return false
		}
		reps, err := r[2].ToArray()
		return err == nil && len(reps) == 0
	})
}
