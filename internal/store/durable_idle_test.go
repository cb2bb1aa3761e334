package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// serverStats reads counters of the server at url: a command's calls (INFO commandstats) and
// the connections it accepted (INFO stats).
func serverStats(t *testing.T, c rueidis.Client) (calls map[string]int, conns int) {
	t.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("everything").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	calls = map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls="); ok && strings.HasPrefix(line, "cmdstat_") {
			n, _ := strconv.Atoi(strings.Split(rest, ",")[0])
			calls[name] = n
		}
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			conns, _ = strconv.Atoi(v)
		}
	}
	return calls, conns
}

// A confirmed write on a standalone (or Sentinel) deployment keeps its dedicated connection
// for the next one: giving it back to rueidis cost the server a round trip of seven commands
// (UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE, three PINGs, DISCARD) per write, about a quarter of
// a revocation's Redis CPU. A burst keeps at most durableIdleMax; a failed write's connection
// is given back; closing the store gives every kept one back.
func TestConfirmedWritesKeepTheirConnection(t *testing.T) {
	t.Parallel()
	primary := testredis.StartServer(t)
	// With client-side caching on, as the gateway runs (giving a connection back costs
	// nothing more without it).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: 2 * time.Second,
		Durability: &store.Durability{Replicas: store.DurableAuto}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if !s.Caps.ClientCache {
		t.Fatal("client-side caching is off")
	}
	admin := testredis.NodeClient(t, primary.Addr())
	prefix := testredis.Prefix(t)
	if err := durableSet(s, prefix+":first"); err != nil {
		t.Fatal(err)
	}
	calls0, conns0 := serverStats(t, admin)
	const writes = 50
	for i := range writes {
		if err := durableSet(s, prefix+":"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	calls, conns := serverStats(t, admin)
	// (PINGs are left out: rueidis also sends them to keep idle connections alive.)
	for _, cmd := range []string{"unsubscribe", "punsubscribe", "sunsubscribe", "discard"} {
		if n := calls[cmd] - calls0[cmd]; n != 0 {
			t.Errorf("%d sequential confirmed writes sent %s %d times, want 0 (their connection is kept)", writes, cmd, n)
		}
	}
	if n := conns - conns0; n != 0 {
		t.Errorf("%d sequential confirmed writes opened %d connections, want 0", writes, n)
	}
	if n := s.Durable.ConnsKept(); n != 1 {
		t.Errorf("%d connections kept after sequential writes, want 1", n)
	}

	// A burst keeps at most durableIdleMax.
	var wg sync.WaitGroup
	for w := range 3 * store.DurableIdleMax {
		wg.Go(func() {
			for i := range 5 {
				if err := durableSet(s, prefix+":burst:"+strconv.Itoa(w)+":"+strconv.Itoa(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := s.Durable.ConnsKept(); n > store.DurableIdleMax || n == 0 {
		t.Errorf("%d connections kept after a burst, want 1 to durableIdleMax (%d)", n, store.DurableIdleMax)
	}

	// A failed write gives its connection back: nothing it left on the wire reaches the next.
	kept := s.Durable.ConnsKept()
	err = s.Durable.Run(context.Background(), s.Client, func(c rueidis.Client) (bool, error) {
		return true, rueidis.NewLuaScript("return redis.error_reply('no')").Exec(context.Background(), c, []string{prefix + ":x"}, nil).Error()
	})
	if err == nil {
		t.Fatal("a script that fails: no error")
	}
	if n := s.Durable.ConnsKept(); n != kept-1 {
		t.Errorf("%d connections kept after a failed write, want %d (its connection given back)", n, kept-1)
	}
	if err := durableSet(s, prefix+":after-failure"); err != nil {
		t.Fatal(err)
	}

	s.Close()
	if n := s.Durable.ConnsKept(); n != 0 {
		t.Errorf("%d connections kept after Close, want 0", n)
	}
	if err := durableSet(s, prefix+":closed"); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write on a closed store: %v, want the client's closed error", err)
	}
}

// A cluster's dedicated connections are pinned to a slot's node by their first command:
// none is kept.
func TestClusterConfirmedWritesKeepNoConnection(t *testing.T) {
	t.Parallel()
	c := testredis.StartCluster(t)
	s := openDurable(t, c.URL(), store.Durability{Replicas: store.DurableAuto})
	prefix := testredis.Prefix(t)
	for i := range 10 {
		if err := durableSet(s, "{"+prefix+strconv.Itoa(i)+"}:k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Durable.ConnsKept(); n != 0 {
		t.Errorf("%d connections kept on a cluster, want 0", n)
	}
}

// Kept connections do not outlive the server they talk to: once Redis restarted (on the same
// address), the next confirmed writes take new connections instead of failing on the dead
// ones (each would have answered 503).
func TestKeptConnectionsDieWithTheServer(t *testing.T) {
	t.Parallel()
	primary := testredis.StartServer(t)
	s := openDurable(t, primary.URL(), store.Durability{Replicas: store.DurableAuto})
	prefix := testredis.Prefix(t)
	var wg sync.WaitGroup
	for w := range 8 { // a few kept connections
		wg.Go(func() {
			if err := durableSet(s, prefix+":before:"+strconv.Itoa(w)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s.Durable.ConnsKept() == 0 {
		t.Fatal("no connection kept")
	}
	primary.Stop()
	primary.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s.Client.Do(ctx, s.Client.B().Ping().Build()).Error() != nil { // the shared connection back
		if ctx.Err() != nil {
			t.Fatal("the store did not reconnect")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 10 {
		if err := durableSet(s, prefix+":after:"+strconv.Itoa(i)); err != nil {
			t.Fatalf("confirmed write %d after the restart: %v", i, err)
		}
	}
}
