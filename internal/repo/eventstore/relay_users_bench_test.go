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
// commandstats: the reads' commands, relay.lua, the acks).
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
		// RelayUsers' steps one by one, to read the server's time of each: the read's plain
		// commands, then the scripts of the copy and the ack.
		testredis.ResetScriptCost(b, s.Client)
		b.StartTimer()
		bs, errs := es.outbox.read(ctx, tags)
		b.StopTimer()
		usec += serverUsec(b, s.Client, false)
		testredis.ResetScriptCost(b, s.Client)
		b.StartTimer()
		n, cerrs := es.copyUsers(ctx, tags, bs)
		aerrs := es.outbox.ack(ctx, tags, bs)
		b.StopTimer()
		usec += serverUsec(b, s.Client, true)
		if err := firstErr(append(append(errs, cerrs...), aerrs...)); err != nil || n != users {
			b.Fatalf("relayed %d, %v", n, err)
		}
		round++
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1000/float64(b.N*users), "wall-µs/event")
	b.ReportMetric(usec/float64(b.N*users), "server-µs/event")
}

// serverUsec is the server's time since the last reset (INFO commandstats): in scripts alone
// (a script's commands count in their own lines and in the script's), or in every command but
// INFO and CONFIG.
func serverUsec(b *testing.B, c rueidis.Client, scripts bool) float64 {
	b.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || name == "info" || strings.HasPrefix(name, "config") || scripts && name != "evalsha" && name != "eval" {
			continue
		}
		if i := strings.Index(rest, "usec="); i >= 0 {
			v, _, _ := strings.Cut(rest[i+5:], ",")
			f, _ := strconv.ParseFloat(v, 64)
			usec += f
		}
	}
	return usec
}
