package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A durable write is confirmed by WAIT on the connection that wrote. These tests freeze the
// replica (SIGSTOP: its link stays open, it acknowledges nothing) so that only a WAIT measuring
// the write itself can notice.

func openDurable(t *testing.T, url string, d store.Durability) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Options{URL: url, Timeout: 2 * time.Second, DisableCache: true, Durability: &d})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(s.Close)
	return s
}

// durableSet writes key through Durable.Run the way the repositories do (a script through
// rueidis.Lua.Exec on the client Run hands over).
var setScript = rueidis.NewLuaScript("redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return 1")

func durableSet(s *store.Store, key string) error {
	return s.Durable.Run(context.Background(), s.Client, func(c rueidis.Client) (bool, error) {
		return true, setScript.Exec(context.Background(), c, []string{key}, []string{"v"}).Error()
	})
}

func TestDurableWriteWaitsOnTheConnectionThatWrote(t *testing.T) {
	t.Parallel()
	primary, replica := testredis.StartPrimaryWithReplica(t)
	s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: 300 * time.Millisecond})
	prefix := testredis.Prefix(t)

	replica.Pause()
	defer replica.Resume()
	// The control (first, while no pooled connection has written anything): a WAIT sent with Do
	// after a write sent with Do runs on another connection (rueidis sends blocking commands on
	// pooled connections), whose client wrote nothing, and answers at once that the frozen
	// replica has it.
	ctx := context.Background()
	if err := s.Client.Do(ctx, s.Client.B().Set().Key(prefix+":b").Value("v").Px(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Client.Do(ctx, s.Client.B().Wait().Numreplicas(1).Timeout(300).Build()).AsInt64()
	if err != nil || n != 1 {
		t.Fatalf("control: WAIT on another connection = %d, %v; want 1 (an acknowledgement of nothing)", n, err)
	}
	// The durable write is not acknowledged: the replica is frozen.
	err = durableSet(s, prefix+":c")
	if !errors.Is(err, store.ErrNotDurable) || !store.IsUnavailable(err) {
		t.Fatalf("durable write with the replica frozen: %v, want ErrNotDurable (unavailable)", err)
	}
	replica.Resume()
	if err := durableSet(s, prefix+":d"); err != nil {
		t.Fatalf("durable write after the replica resumed: %v", err)
	}
}

// Without a replica, auto sends no WAIT (the write answers at once); a strict count refuses.
func TestDurableWriteWithoutReplica(t *testing.T) {
	t.Parallel()
	primary := testredis.StartServer(t)
	prefix := testredis.Prefix(t)
	auto := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: 200 * time.Millisecond})
	if err := durableSet(auto, prefix+":a"); err != nil {
		t.Fatalf("auto without a replica: %v", err)
	}
	if n := waitCalls(t, auto); n != 0 {
		t.Errorf("auto without a replica sent %d WAIT, want 0", n)
	}
	strict := openDurable(t, primary.URL(), store.Durability{Replicas: 1, Timeout: 200 * time.Millisecond})
	if err := durableSet(strict, prefix+":b"); !errors.Is(err, store.ErrNotDurable) {
		t.Fatalf("GATEWAY_DURABLE_REPLICAS=1 without a replica: %v, want ErrNotDurable", err)
	}
	if auto.Durable.Mode() != "auto" || strict.Durable.Mode() != "1" {
		t.Errorf("modes %q %q", auto.Durable.Mode(), strict.Durable.Mode())
	}
}

func waitCalls(t *testing.T, s *store.Store) int64 {
	t.Helper()
	info, err := s.Client.Do(context.Background(), s.Client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_wait:calls="); ok {
			v, _, _ = strings.Cut(v, ",")
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// With append-only on (the test servers run appendonly yes), a durable write also waits for the
// primary's fsync (WAITAOF) unless GATEWAY_DURABLE_AOF=off; the replicas' WAIT stays.
func TestDurableWriteAOF(t *testing.T) {
	t.Parallel()
	primary, _ := testredis.StartPrimaryWithReplica(t)
	prefix := testredis.Prefix(t)
	for _, tc := range []struct {
		name  string
		noAOF bool
		want  int64
	}{{"auto", false, 1}, {"off", true, 0}} {
		s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second, NoAOF: tc.noAOF})
		wait0, aof0 := commandCalls(t, s, "wait"), commandCalls(t, s, "waitaof")
		if err := durableSet(s, prefix+":"+tc.name); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if w, a := commandCalls(t, s, "wait")-wait0, commandCalls(t, s, "waitaof")-aof0; w != 1 || a != tc.want {
			t.Errorf("GATEWAY_DURABLE_AOF=%s: %d WAIT and %d WAITAOF, want 1 and %d", tc.name, w, a, tc.want)
		}
	}
}

func commandCalls(t *testing.T, s *store.Store, cmd string) int64 {
	t.Helper()
	info, err := s.Client.Do(context.Background(), s.Client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			v, _, _ = strings.Cut(v, ",")
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// Auto learns that the deployment has replicas from the first replica a primary lists online,
// and keeps requiring one: with the replication link cut (the primary sees its replica go), a
// durable write is refused at once (ErrNoReplica, no WAIT sent) instead of acknowledged, until
// the replica is back.
func TestDurableAutoKeepsRequiringASeenReplica(t *testing.T) {
	t.Parallel()
	primary := testredis.StartServer(t, "--repl-diskless-sync-delay", "0")
	s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second})
	prefix := testredis.Prefix(t)
	if err := durableSet(s, prefix+":alone"); err != nil || s.Durable.Replicated() {
		t.Fatalf("auto on a primary never seen with a replica: %v, replicated %v; want no wait", err, s.Durable.Replicated())
	}
	link := testredis.StartProxy(t, primary.Addr(), 0)
	replica := testredis.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(link.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := testredis.WaitLinkUp(ctx, replica.Port); err != nil {
		t.Fatal(err)
	}
	if err := durableSet(s, prefix+":seen"); err != nil || !s.Durable.Replicated() {
		t.Fatalf("auto with a replica online: %v, replicated %v", err, s.Durable.Replicated())
	}
	link.Partition()
	for online(t, s) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	waits, start := waitCalls(t, s), time.Now()
	if err := durableSet(s, prefix+":cut"); !errors.Is(err, store.ErrNoReplica) || !store.IsUnavailable(err) {
		t.Fatalf("durable write with the replica cut off: %v, want ErrNoReplica (unavailable)", err)
	}
	if took, n := time.Since(start), waitCalls(t, s)-waits; took > 500*time.Millisecond || n != 0 {
		t.Errorf("refusal after %v with %d WAIT; want it at once, without WAIT", took, n)
	}
	link.Heal()
	if err := testredis.WaitLinkUp(ctx, replica.Port); err != nil {
		t.Fatal(err)
	}
	if err := durableSet(s, prefix+":healed"); err != nil {
		t.Fatalf("durable write once the replica is back: %v", err)
	}
}

// online is the number of replicas the primary of s lists online (ROLE).
func online(t *testing.T, s *store.Store) int {
	t.Helper()
	r, err := s.Client.Do(context.Background(), s.Client.B().Role().Build()).ToArray()
	if err != nil || len(r) < 3 {
		t.Fatalf("ROLE: %v", err)
	}
	reps, _ := r[2].ToArray()
	return len(reps)
}

// A gateway that starts while the replica is cut off learns of it where the deployment records
// it: the Sentinels (SENTINEL REPLICAS) and a primary with min-replicas-to-write (whose
// NOREPLICAS refusal of the start-up probe does not stop the start).
func TestDurableAutoLearnsReplicasAtStart(t *testing.T) {
	t.Parallel()
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		set := testredis.StartSentinel(t, testredis.SentinelOptions{})
		set.Link.Partition()
		s := openDurable(t, set.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second})
		for online(t, s) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		if err := durableSet(s, testredis.Prefix(t)+":cut"); !errors.Is(err, store.ErrNoReplica) {
			t.Fatalf("durable write with the replica cut off before the start: %v, want ErrNoReplica", err)
		}
	})
	t.Run("min-replicas-to-write", func(t *testing.T) {
		t.Parallel()
		primary := testredis.StartServer(t, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
		s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second})
		if !s.Durable.Replicated() || s.Caps.FieldExpiry != store.FieldExpiryHSETEX {
			t.Errorf("replicated %v, field expiry %q; want true, hsetex", s.Durable.Replicated(), s.Caps.FieldExpiry)
		}
		if err := durableSet(s, testredis.Prefix(t)+":refused"); !store.IsUnavailable(err) {
			t.Errorf("write refused by Redis for want of replicas: %v, want unavailable (503)", err)
		}
	})
	t.Run("standalone without a record", func(t *testing.T) {
		t.Parallel()
		primary := testredis.StartServer(t)
		s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second})
		if s.Durable.Replicated() {
			t.Error("a primary with no replica and no min-replicas-to-write counted as replicated")
		}
	})
}

// Ready refuses a write before it runs when fewer replicas are connected than it needs (auto:
// once the deployment has shown one; a strict count: that many), so nothing is left on the
// primary unconfirmed; with them connected the write goes on and is confirmed.
func TestReadyRefusesBeforeTheWrite(t *testing.T) {
	t.Parallel()
	primary, replica := testredis.StartPrimaryWithReplica(t)
	prefix := testredis.Prefix(t)
	readySet := func(s *store.Store, key string) error {
		return s.Durable.Run(context.Background(), s.Client, func(c rueidis.Client) (bool, error) {
			if err := store.Ready(context.Background(), c, key); err != nil {
				return false, err
			}
			return true, setScript.Exec(context.Background(), c, []string{key}, []string{"v"}).Error()
		})
	}
	auto := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto, Timeout: time.Second})
	strict := openDurable(t, primary.URL(), store.Durability{Replicas: 2, Timeout: time.Second})
	if !auto.Durable.Waits() || !strict.Durable.Waits() {
		t.Fatalf("Waits: auto %v, strict %v; want both (the replica is seen at start)", auto.Durable.Waits(), strict.Durable.Waits())
	}
	if err := readySet(auto, prefix+":a"); err != nil {
		t.Fatalf("auto with its replica: %v", err)
	}
	exists := func(key string) bool {
		n, err := auto.Client.Do(context.Background(), auto.Client.B().Exists().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if err := readySet(strict, prefix+":b"); !errors.Is(err, store.ErrNoReplica) || !store.IsUnavailable(err) || exists(prefix+":b") {
		t.Fatalf("2 replicas required, 1 connected: %v (written: %v); want ErrNoReplica, nothing written", err, exists(prefix+":b"))
	}
	replica.Stop()
	for deadline := time.Now().Add(10 * time.Second); readySet(auto, prefix+":c") == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the primary still lists its stopped replica after 10s")
		}
	}
	if err := readySet(auto, prefix+":d"); !errors.Is(err, store.ErrNoReplica) || !store.IsUnavailable(err) || exists(prefix+":d") {
		t.Fatalf("auto with its replica gone: %v (written: %v); want ErrNoReplica, nothing written", err, exists(prefix+":d"))
	}
}
