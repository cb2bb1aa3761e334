package testredis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// SentinelSet is a private Sentinel deployment on loopback: one primary, one replica and three
// Sentinels (the same Redis 8 binary, run with --sentinel) monitoring the master set
// MasterSet with a quorum of two. The replica replicates through Link, a Proxy that can slow
// the replication link and drop what is in flight.
type SentinelSet struct {
	t         testing.TB
	MasterSet string
	Primary   *Server
	Replica   *Server
	Link      *Proxy
	Sentinels []int // ports
	procs     []*exec.Cmd
}

// SentinelOptions shape StartSentinel.
type SentinelOptions struct {
	// LinkDelay holds the replication stream (both ways) this long in the proxy.
	LinkDelay time.Duration
	// DownAfter is Sentinel's down-after-milliseconds (default 400ms).
	DownAfter time.Duration
}

// StartSentinel starts the deployment and waits until every Sentinel knows the primary, the
// replica and the other Sentinels; it skips the test when HASHGATE_REDIS8_SERVER is unset.
// Everything is stopped at cleanup.
func StartSentinel(t testing.TB, o SentinelOptions) *SentinelSet {
	t.Helper()
	bin := os.Getenv(EnvRedis8Server)
	if bin == "" {
		t.Skipf("%s is unset (run `make test`)", EnvRedis8Server)
	}
	if o.DownAfter <= 0 {
		o.DownAfter = 400 * time.Millisecond
	}
	s := &SentinelSet{t: t, MasterSet: "hg"}
	s.Primary = StartServer(t, "--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1")
	s.Link = StartProxy(t, fmt.Sprintf("127.0.0.1:%d", s.Primary.Port), o.LinkDelay)
	s.Replica = StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(s.Link.Port),
		"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
		// Announce the replica's own address (its link to the primary is the proxy's).
		"--replica-announce-ip", "127.0.0.1")
	t.Cleanup(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitLinkUp(ctx, s.Replica.Port); err != nil {
		t.Fatalf("sentinel set: %v", err)
	}
	for range 3 {
		for attempt := 1; ; attempt++ {
			port := freePorts(t, 1)[0]
			cmd := s.startSentinel(bin, port, o.DownAfter)
			err := WaitOwn(ctx, port, cmd)
			if err == nil {
				s.procs, s.Sentinels = append(s.procs, cmd), append(s.Sentinels, port)
				break
			}
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
			if !errors.Is(err, errPortTaken) || attempt == 3 {
				t.Fatalf("sentinel: %v", err)
			}
		}
	}
	if err := s.waitKnown(ctx); err != nil {
		t.Fatalf("sentinel set: %v", err)
	}
	return s
}

// URL is the REDIS_URL of the deployment: every Sentinel, and the master set.
func (s *SentinelSet) URL() string {
	addrs := make([]string, len(s.Sentinels))
	for i, p := range s.Sentinels {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return "redis://" + strings.Join(addrs, ",") + "?master_set=" + s.MasterSet
}

// WaitMaster polls until every Sentinel names want as the primary.
func (s *SentinelSet) WaitMaster(ctx context.Context, want string) error {
	for {
		agreed := 0
		for _, p := range s.Sentinels {
			r, err := s.ask(ctx, p, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterSet).AsStrSlice()
			if err == nil && len(r) == 2 && r[0]+":"+r[1] == want {
				agreed++
			}
		}
		if agreed == len(s.Sentinels) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinels did not agree on %s as the master", want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitKnown waits until every Sentinel sees the replica and the two other Sentinels (so a
// failover can be agreed and has a replica to promote).
func (s *SentinelSet) waitKnown(ctx context.Context) error {
	var why string
	for {
		ok := true
		for _, p := range s.Sentinels {
			m, err := s.ask(ctx, p, "SENTINEL", "MASTER", s.MasterSet).AsStrMap()
			if err != nil {
				ok, why = false, err.Error()
				break
			}
			if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				ok, why = false, fmt.Sprintf("sentinel %d: %s replicas, %s other sentinels", p, m["num-slaves"], m["num-other-sentinels"])
				break
			}
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sentinels not ready: %s", why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *SentinelSet) ask(ctx context.Context, port int, args ...string) rueidis.RedisResult {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)},
		ForceSingleClient: true, DisableCache: true, DisableRetry: true})
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.Do(cctx, c.B().Arbitrary(args...).Build())
}

func (s *SentinelSet) stop() {
	for _, c := range s.procs {
		if c.Process != nil {
			_ = c.Process.Kill()
			_, _ = c.Process.Wait()
		}
	}
}

// WaitLinkUp polls the replica on port until its replication link is up.
func WaitLinkUp(ctx context.Context, port int) error {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)},
		ForceSingleClient: true, DisableCache: true, DisableRetry: true})
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		info, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica on %d: replication link not up", port)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startSentinel starts a Sentinel on port that monitors the primary.
func (s *SentinelSet) startSentinel(bin string, port int, downAfter time.Duration) *exec.Cmd {
	s.t.Helper()
	dir := s.t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s 4000\n"+
		"sentinel parallel-syncs %s 1\n",
		port, dir, s.MasterSet, s.Primary.Port, s.MasterSet, downAfter.Milliseconds(), s.MasterSet, s.MasterSet)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel", "--daemonize", "no", "--logfile", "")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start sentinel: %v", err)
	}
	return cmd
}
