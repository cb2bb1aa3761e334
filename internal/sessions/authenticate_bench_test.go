package sessions

import (
	"context"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkAuthenticateHit is the forward-auth authentication of a session answered from the
// memo (no round trip), on standalone Redis 8 with broadcast tracking, as the gateway runs:
//
//	owner-verdict-kept  the repository checks the owner (OwnerCheck, as internal/app wires
//	                    it) once per decoded session and keeps the verdict with the copy
//	owner-per-request   the repository has no OwnerCheck: the service hashes the owner on
//	                    every request (before the verdict was kept)
//
//	go test -run '^$' -bench BenchmarkAuthenticateHit -benchmem ./internal/sessions/
func BenchmarkAuthenticateHit(b *testing.B) {
	be := testredis.Named(b, "redis8")
	for _, kept := range []bool{true, false} {
		name := "owner-per-request"
		if kept {
			name = "owner-verdict-kept"
		}
		b.Run(name, func(b *testing.B) {
			prefix := testredis.Prefix(b)
			s := testredis.Open(b, be, be.Tracking(prefix))
			r, h := ownerRepo(b, s, prefix, kept)
			svc, err := New(r, h, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour, ChallengeTTL: 5 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			is, err := svc.Create(ctx, "acme", CreateInput{UserID: "alice", AuthLevel: "BASIC"})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; ; i++ { // until a request is a hit (a fill races the create's push)
				before, _ := svc.CacheStats()
				if _, err := svc.Authenticate(ctx, is.Token); err != nil {
					b.Fatal(err)
				}
				if hits, _ := svc.CacheStats(); hits > before {
					break
				}
				if i == 100 {
					b.Fatal("the session never stays in the memo")
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Authenticate(ctx, is.Token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
