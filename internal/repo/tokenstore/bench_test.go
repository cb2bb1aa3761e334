package tokenstore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkTokenCreate is one token_create.lua call (a root token; since the event stream:
// with its token.issued append) on each real backend the run provides.
//
//	go test -run '^$' -bench BenchmarkTokenCreate ./internal/repo/tokenstore/
//
// The "private" row runs on a private Redis 8 (HASHGATE_REDIS8_SERVER, no persistence) and
// reports the server's time per script (server-µs/script).
func BenchmarkTokenCreate(b *testing.B) {
	backends := testredis.Backends()
	if os.Getenv(testredis.EnvRedis8Server) != "" {
		backends = append(backends, testredis.Backend{Name: "private"})
	}
	for _, be := range backends {
		if be.Name != "private" && (!be.Real() || be.URL == "") {
			continue
		}
		b.Run(be.Name, func(b *testing.B) {
			if be.Name == "private" {
				be = testredis.Backend{Name: "private", Env: testredis.EnvRedis8, URL: testredis.StartServer(b, "--appendonly", "no").URL(), Broadcast: true}
			}
			s := testredis.Open(b, be)
			h, _, err := keyhash.Generate()
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(s, Options{Prefix: testredis.Prefix(b), Hasher: h, SafetyWindow: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			now := time.Now()
			b.ReportAllocs()
			testredis.ResetScriptCost(b, s.Client)
			i := 0
			for b.Loop() {
				tenant := "bench-" + string(rune('a'+i%26)) // 26 tenants: under each one's quota
				if err := r.Create(ctx, newToken(tenant, now, time.Hour)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if be.Name == "private" {
				b.ReportMetric(testredis.ScriptCost(b, s.Client), "server-µs/script")
			}
			// The tenants' streams' size per event (none before the event stream).
			var bytes, n int64
			for j := range 26 {
				key := r.Keys.Key("events", r.tag("bench-"+string(rune('a'+j))))
				m, _ := s.Client.Do(ctx, s.Client.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
				l, _ := s.Client.Do(ctx, s.Client.B().Xlen().Key(key).Build()).AsInt64()
				bytes, n = bytes+m, n+l
			}
			if n > 0 {
				b.ReportMetric(float64(bytes)/float64(n), "stream-B/event")
			}
		})
	}
}
