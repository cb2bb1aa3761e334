package eventstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkSweep is one full sweep pass over 100,000 user hashes of the per-user layout (six
// fields each, as a one-session user's; none with pending events) on a private Redis 8: it
// reports the server's time of the pass per user hash (INFO commandstats, every command) and
// the pass's wall time.
//
//	go test -run '^$' -bench BenchmarkSweep -benchtime 3x ./internal/repo/eventstore/
func BenchmarkSweep(b *testing.B) {
	const users = 100000
	s := testredis.PrivateStore(b)
	prefix := testredis.Prefix(b)
	es := newStoreWith(b, s, prefix, true)
	ctx := context.Background()
	h := es.outbox.(outboxHash)
	for from := 0; from < users; from += 1000 {
		cmds := make([]rueidis.Completed, 0, 1000)
		for i := from; i < from+1000; i++ {
			tag := fmt.Sprintf("u%011d", i)
			cmds = append(cmds, s.Client.B().Hset().Key(h.key(tag)).FieldValue().FieldValue("userId", tag).FieldValue("tenantId", "acme").
				FieldValue("schemaVersion", "2").FieldValue("createdAtMs", "1795735777019").FieldValue("updatedAtMs", "1795735777019").
				FieldValue("AAAAAAAAAAAAAAAAAA:live", "1795742977019.dGVzdC12ZXJpZmllci1tYWM").Build())
		}
		for _, r := range s.Client.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
	r := NewRelay(es, time.Hour)
	testredis.ResetScriptCost(b, s.Client)
	start := time.Now()
	for b.Loop() {
		if err := r.Sweep(ctx); err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start) / time.Duration(b.N)
	info, err := s.Client.Do(ctx, s.Client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\n") {
		if i := strings.Index(line, "usec="); i >= 0 && strings.HasPrefix(line, "cmdstat_") &&
			(strings.HasPrefix(line, "cmdstat_scan:") || strings.HasPrefix(line, "cmdstat_hmget:")) {
			v, _, _ := strings.Cut(line[i+5:], ",")
			f, _ := strconv.ParseFloat(v, 64)
			usec += f
		}
	}
	b.ReportMetric(usec/float64(b.N)/users, "server-µs/user")
	b.ReportMetric(usec/float64(b.N)/1000, "server-ms/pass")
	b.ReportMetric(float64(wall.Milliseconds()), "wall-ms/pass")
}
