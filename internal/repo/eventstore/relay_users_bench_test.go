package eventstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkRelayUsers is the relay of one drain's worth of users (256 users of one tenant, one
// session event each, in their session hashes: the per-user layout) on a private Redis 8: it
// reports the gateway's wall time per event and the server's time per event (INFO
// commandstats: the relay's scripts, the reads, relay.lua, the acks).
//
//	go test -run '^$' -bench BenchmarkRelayUsers ./internal/repo/eventstore/
func BenchmarkRelayUsers(b *testing.B) {
	const users = 256
	s := testredis.PrivateStore(b)
	es := newStoreWith(b, s, testredis.Prefix(b), true)
	ctx := context.Background()
	var usec float64
	round := 0
	for b.Loop() {
		b.StopTimer()
		tags := make([]string, users)
		for i := range tags {
			tags[i] = fmt.Sprintf("u%05d%06d", round, i)
			appendOutbox(b, es, tags[i], "acme", 0, 1)
		}
		testredis.ResetScriptCost(b, s.Client)
		b.StartTimer()
		if n, err := es.RelayUsers(ctx, tags); err != nil || n != users {
			b.Fatalf("relayed %d, %v", n, err)
		}
		b.StopTimer()
		usec += serverUsec(b, s.Client)
		round++
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N*users), "wall-µs/event")
	b.ReportMetric(usec/float64(b.N*users), "server-µs/event")
}

// serverUsec is the server's time in scripts since the last reset (INFO commandstats).
func serverUsec(b *testing.B, c rueidis.Client) float64 {
	b.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\n") {
		// a script's commands count in their own lines and in the script's: the scripts' alone
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		if i := strings.Index(line, "usec="); i >= 0 {
			v, _, _ := strings.Cut(line[i+5:], ",")
			f, _ := strconv.ParseFloat(v, 64)
			usec += f
		}
	}
	return usec
}
