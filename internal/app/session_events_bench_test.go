package app_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkSessionEventsCost is what session events cost Redis per session create (a new user
// each, as `make bench`'s session-create row), the relay included: a gateway built by app.New
// over a private Redis 8 (no persistence) creates b.N sessions from 16 goroutines, with
// session events off, the ends only (the default: a create writes none) and all; the relay runs in the background and the row waits until it
// copied every event into the tenant's stream. It reports the server's CPU per create (INFO
// cpu: user + sys, so the round trips' system calls count), the scripts' time per create
// (INFO commandstats), the scripts and socket reads the server saw per create, and this
// process's CPU per create (the gateway, the relay included). These depend far less on the
// machine's load than throughput does. The revoke rows do the same for revocations by a
// service (DELETE /v1/sessions/{id}) of b.N sessions created before the timer starts: each
// writes session.revoked with the ends (the default) and all, nothing with off.
//
//	go test -run '^$' -bench BenchmarkSessionEventsCost -benchtime 20000x -count 3 ./internal/app/
func BenchmarkSessionEventsCost(b *testing.B) {
	s := testredis.PrivateStore(b)
	for _, op := range []string{"create", "revoke"} {
		for _, set := range []string{"off", "ends", "all"} {
			b.Run(op+"/session-events-"+set, func(b *testing.B) {
				benchSessionEvents(b, s, set, op == "revoke")
			})
		}
	}
}

func benchSessionEvents(b *testing.B, s *store.Store, set string, revoke bool) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	cfg.KeyPrefix = testredis.Prefix(b)
	cfg.SessionEvents = set
	g, err := app.New(cfg, s, app.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g.Start()
	defer g.Stop()
	ctx := context.Background()
	tenant := "bench-" + strconv.Itoa(b.N)
	stream := repo.Keys{Prefix: cfg.KeyPrefix}.EventStream(g.Hasher.TenantTag(tenant))
	const workers = 16
	// each runs op(i) for i in 1..b.N from the workers
	each := func(op func(i int64) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > int64(b.N) {
						return
					}
					if err := op(i); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	create := func(i int64) (string, error) {
		c, err := g.Sessions.Create(ctx, tenant, sessions.CreateInput{UserID: fmt.Sprintf("u-%d-%d", b.N, i), AuthLevel: "BASIC"})
		if err != nil {
			return "", err
		}
		return c.Ref.ID(), nil
	}
	ids := make([]string, b.N+1)
	if revoke {
		each(func(i int64) (err error) { ids[i], err = create(i); return err })
		waitEvents(ctx, b, s.Client, stream, 0) // the relay copied every event of the creates
	}
	added, err := entriesAdded(ctx, s.Client, stream)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Client.Do(ctx, s.Client.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	before := redisCost(b, s.Client)
	cpu0 := processCPU(b)
	b.ResetTimer()
	if revoke {
		each(func(i int64) error { return g.Sessions.Revoke(ctx, tenant, ids[i]) })
	} else {
		each(func(i int64) error { _, err := create(i); return err })
	}
	if set == "all" || revoke && set == "ends" { // the relay's work counts: wait until every event is in the tenant's stream
		waitEvents(ctx, b, s.Client, stream, added+int64(b.N))
	}
	b.StopTimer()
	gw := processCPU(b) - cpu0
	d := redisCost(b, s.Client).sub(before)
	n := float64(b.N)
	b.ReportMetric(gw/n, "gateway-cpu-µs/op")
	b.ReportMetric(d.cpuUsec/n, "redis-cpu-µs/op")
	b.ReportMetric(d.scriptUsec/n, "script-µs/op")
	b.ReportMetric(d.scripts/n, "scripts/op")
	b.ReportMetric(d.reads/n, "reads/op")
	b.Logf("per op, each command (calls, µs): %s", testredis.CommandCost(b, s.Client, b.N))
}

// waitEvents waits until the tenant's stream got want events (0: until it stops growing), then
// for the relay's acks after its last copy.
func waitEvents(ctx context.Context, b *testing.B, c rueidis.Client, stream string, want int64) {
	last, still := int64(-1), 0
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := entriesAdded(ctx, c, stream)
		if err != nil {
			b.Fatal(err)
		}
		if want > 0 && n >= want || want == 0 && still >= 40 {
			break
		}
		if n == last {
			still++
		} else {
			last, still = n, 0
		}
		if time.Now().After(deadline) {
			b.Fatalf("the relay copied %d of %d events", n, want)
		}
	}
	time.Sleep(50 * time.Millisecond)
}

// processCPU is this process's CPU time so far in µs (user + system): the gateway's, the relay
// included, and the benchmark's own goroutines.
func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1000
}

// entriesAdded is how many entries were ever added to stream (XINFO STREAM: the stream is
// trimmed to GATEWAY_EVENTS_MAX_LEN as it grows).
func entriesAdded(ctx context.Context, c rueidis.Client, stream string) (int64, error) {
	info, err := c.Do(ctx, c.B().XinfoStream().Key(stream).Build()).AsMap()
	if rueidis.IsRedisNil(err) || err != nil && strings.Contains(err.Error(), "no such key") {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	added := info["entries-added"]
	return added.AsInt64()
}

// cost is what the server spent: CPU (INFO cpu: user + sys), the scripts' time and calls (INFO
// commandstats) and the socket reads it processed (INFO stats: about one per round trip, or
// per pipeline).
type cost struct{ cpuUsec, scriptUsec, scripts, reads float64 }

func (c cost) sub(o cost) cost {
	return cost{c.cpuUsec - o.cpuUsec, c.scriptUsec - o.scriptUsec, c.scripts - o.scripts, c.reads - o.reads}
}

func redisCost(b *testing.B, c rueidis.Client) cost {
	b.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("everything").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	num := func(v string) float64 {
		f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f
	}
	out := cost{cpuUsec: testredis.ServerCPU(b, c)}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "total_reads_processed":
			out.reads += num(v)
		case "cmdstat_evalsha", "cmdstat_eval":
			for _, kv := range strings.Split(v, ",") {
				name, x, _ := strings.Cut(kv, "=")
				switch name {
				case "usec":
					out.scriptUsec += num(x)
				case "calls":
					out.scripts += num(x)
				}
			}
		}
	}
	return out
}
