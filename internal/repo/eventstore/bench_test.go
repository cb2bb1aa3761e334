package eventstore

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkRelay is the relay of one session event (an outbox of one entry, a typical
// session write's): the outbox read, relay.lua, the ack — a relay of one user alone, off the
// request path. It also reports the tenant stream's size per event (MEMORY USAGE / XLEN).
//
//	go test -run '^$' -bench BenchmarkRelay ./internal/repo/eventstore/
func BenchmarkRelay(b *testing.B) {
	for _, be := range testredis.Backends() {
		if !be.Real() || be.URL == "" {
			continue
		}
		b.Run(be.Name, func(b *testing.B) {
			s := testredis.Open(b, be)
			es := newStore(b, s, testredis.Prefix(b))
			ctx := context.Background()
			const user = "benchUserTag"
			i := 0
			for b.Loop() {
				b.StopTimer()
				appendOutbox(b, es, user, "acme", i, 1)
				b.StartTimer()
				if n, err := es.RelayOutbox(ctx, user); err != nil || n != 1 {
					b.Fatalf("relayed %d, %v", n, err)
				}
				i++
			}
			key := es.keys.EventStream(es.hasher.TenantTag("acme"))
			bytes, _ := s.Client.Do(ctx, s.Client.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
			n, _ := s.Client.Do(ctx, s.Client.B().Xlen().Key(key).Build()).AsInt64()
			if n > 0 {
				b.ReportMetric(float64(bytes)/float64(n), "stream-B/event")
			}
		})
	}
}
