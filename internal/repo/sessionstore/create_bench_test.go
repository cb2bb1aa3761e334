package sessionstore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkSessionCreate is one session create (a new user each time: no eviction) in each
// layout on each real backend that hosts it, with session events off and on (on: the
// session.created append to the user's outbox; the relay's copy is measured by eventstore's
// BenchmarkRelay).
//
//	go test -run '^$' -bench BenchmarkSessionCreate ./internal/repo/sessionstore/
//
// The "private" row runs on a private Redis 8 (HASHGATE_REDIS8_SERVER, no persistence) and
// reports the server's time per script (server-µs/script).
func BenchmarkSessionCreate(b *testing.B) {
	backends := testredis.Backends()
	if os.Getenv(testredis.EnvRedis8Server) != "" {
		backends = append(backends, testredis.Backend{Name: "private"})
	}
	for _, be := range backends {
		if be.Name == "private" {
			be = testredis.Backend{Name: "private", Env: testredis.EnvRedis8, URL: testredis.StartServer(b, "--appendonly", "no").URL(), Broadcast: true}
		} else if !be.Real() || be.URL == "" {
			continue
		}
		s := testredis.Open(b, be)
		for _, l := range []SessionLayout{LayoutPerSession, LayoutPerUser} {
			if Hosts(s.Caps, l) != nil {
				continue
			}
			for _, on := range []bool{false, true} {
				name := be.Name + "/" + string(l) + "/events-off"
				if on {
					name = be.Name + "/" + string(l) + "/events-on"
				}
				b.Run(name, func(b *testing.B) { benchCreate(b, s, l, on, be.Name == "private") })
			}
		}
	}
}

// benchCreate is BenchmarkSessionCreate's row: creates in layout l with session events on or
// off, and the server's time per script when private.
func benchCreate(b *testing.B, s *store.Store, l SessionLayout, on, private bool) {
	e := newSessEnv(b, s, testredis.Prefix(b), func(o *SessionOptions) {
		o.Layout, o.Outbox = l, map[bool]events.SessionEvents{false: events.SessionEventsOff, true: events.SessionEventsAll}[on]
	})
	ctx := context.Background()
	b.ReportAllocs()
	testredis.ResetScriptCost(b, s.Client)
	for b.Loop() {
		ref := sessRef(b, "")
		if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Hour, Absolute: 2 * time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	if private {
		b.ReportMetric(testredis.ScriptCost(b, s.Client), "server-µs/script")
	}
}
