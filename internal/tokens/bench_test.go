package tokens_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// BenchmarkCheck measures the per-request token check (after signature verification) on the
// embedded store and on standalone Redis 8 (when HASHGATE_TEST_REDIS8 is set), with the
// client-side cache on (a hot token: no round trip) and off (one HMGET per request). The
// verify sub-benchmarks are the signature step before it: "verify" is what a hot token costs
// (the authority's verified-token cache answers after the first call, claims still checked),
// "verify-uncached" the full Ed25519 signature and claim checks a token pays the first time.
//
//	go test -run '^$' -bench BenchmarkCheck -benchmem ./internal/tokens/
func BenchmarkCheck(b *testing.B) {
	e := newEnv(b, testredis.Prefix(b))
	ctx := context.Background()
	b.Run("verify", func(b *testing.B) {
		s := testredis.Open(b, testredis.Backends()[0])
		out, err := e.service(b, s, nil, tokens.Options{}).Mint(ctx, mintReq(auth.ScopeTokensRead))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.auth.Verify(out.Token); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-uncached", func(b *testing.B) {
		a := testauth.New(b, auth.Options{Keys: e.keys, VerifyCacheSize: -1})
		tok := testauth.Mint(b, a, "acme", auth.ScopeTokensRead)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, be := range testredis.Backends() {
		if be.Name != "embedded" && be.Name != "redis8" {
			continue
		}
		for _, mode := range []struct {
			name string
			ttl  time.Duration
		}{{"cached", tokens.DefaultCacheTTL}, {"uncached", 0}} {
			b.Run(be.Name+"/"+mode.name, func(b *testing.B) {
				s := testredis.Open(b, be)
				if mode.ttl > 0 && !s.Caps.ClientCache {
					b.Skipf("%s has no client-side caching", be.Name)
				}
				svc := e.service(b, s, nil, tokens.Options{CacheTTL: mode.ttl})
				out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
				if err != nil {
					b.Fatal(err)
				}
				claims, err := e.auth.Verify(out.Token)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := svc.Check(ctx, claims); err != nil {
						b.Fatal(err)
					}
				}
				if hits, misses := svc.CacheStats(); hits+misses > 0 {
					b.ReportMetric(float64(hits)/float64(hits+misses), "hit-ratio")
				}
			})
		}
	}
}
