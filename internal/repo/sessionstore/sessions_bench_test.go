package sessionstore

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthorize measures the repository's hot-path call on every backend the run
// provides, with a plain PING as the round-trip baseline: "uncached" is one script (HMGET of
// the authorization and view fields, PTTL, the refresh decision); "cached" reads through the
// client-side cache (real Redis only). redis-cmds/op counts the commands sent per call.
//
//	go test -run '^$' -bench BenchmarkAuthorize ./internal/repo/
func BenchmarkAuthorize(b *testing.B) {
	for _, be := range testredis.Backends() {
		if be.Real() && be.URL == "" {
			continue
		}
		b.Run(be.Name, func(b *testing.B) {
			s := testredis.Open(b, be)
			ctx := context.Background()
			b.Run("ping-baseline", func(b *testing.B) {
				for b.Loop() {
					if err := s.Client.Do(ctx, s.Client.B().Ping().Build()).Error(); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, mode := range []struct {
				name string
				ttl  time.Duration
			}{{"uncached", 0}, {"cached", 2 * time.Second}} {
				if mode.ttl > 0 && !s.Caps.ClientCache {
					continue
				}
				e := newSessEnv(b, s, testredis.Prefix(b), func(o *SessionOptions) { o.CacheTTL = mode.ttl })
				ref := e.create("", "acme", "alice", 30*time.Minute, 24*time.Hour)
				b.Run(mode.name, func(b *testing.B) {
					b.ReportAllocs()
					e.count.Reset()
					n := 0
					for b.Loop() {
						if _, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); err != nil {
							b.Fatal(err)
						}
						n++
					}
					b.ReportMetric(float64(e.count.Sent())/float64(n), "redis-cmds/op")
				})
			}
		})
	}
}
