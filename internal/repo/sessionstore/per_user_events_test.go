package sessionstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestPerUserWritesDeclareOneKeyWithEvents: with session events on, every per-user session
// write declares the user's hash alone (verify adds the attempt counter of the same slot) and
// its events are in that hash, so Redis serves it while the user's slot migrates. With the
// events in an outbox stream, each declared one key more (refused with TRYAGAIN during a
// migration: TestSlotMigrationDeviceList/per-user in internal/faults saw 503s).
func TestPerUserWritesDeclareOneKeyWithEvents(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, _ *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		declared := func(op string, want int) {
			t.Helper()
			n := 0
			for _, c := range e.count.Commands() {
				if c.Name() != "EVALSHA" && c.Name() != "EVAL" {
					continue
				}
				n++
				if k, err := strconv.Atoi(c.Args[2]); err != nil || k != want || c.Args[3] != e.r.userKey(tag) {
					t.Errorf("%s: %s declares %s keys, want %d starting with the user's hash", op, c.Args[1][:8], c.Args[2], want)
				}
			}
			if n == 0 {
				t.Errorf("%s ran no script", op)
			}
			e.count.Reset()
		}
		e.count.Reset()
		a := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		b := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		declared("create", 1)
		if _, err := e.r.StartChallenge(ctx, session.MFAChallenge{Ref: a, Tenant: "acme", ID: "c1", CodeMAC: "good", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		declared("challenge", 1)
		if _, err := e.r.Verify(ctx, session.MFAVerification{Ref: a, Tenant: "acme", ChallengeID: "c1", CodeMAC: "good", VerifierMAC: testMAC}); err != nil {
			t.Fatal(err)
		}
		declared("verify", 2)
		if _, err := e.r.Rotate(ctx, a, "acme", testMAC); err != nil {
			t.Fatal(err)
		}
		declared("rotate", 1)
		if ok, err := e.r.Revoke(ctx, b, "acme"); err != nil || !ok {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		declared("revoke", 1)
		if _, err := e.r.RevokeAll(ctx, tag, ""); err != nil {
			t.Fatal(err)
		}
		declared("revoke-all", 1)
		if got := len(e.outboxEvents(tag)); got != 7 { // 2 created, challenged, verified, rotated, 2 revoked
			t.Fatalf("the user's hash holds %d events, want 7", got)
		}
		for _, k := range e.keys() { // the user's hash (its events wait for the relay) and the MFA attempt counter
			if k != e.r.userKey(tag) && !strings.HasSuffix(k, ":mfa") {
				t.Fatalf("key %s, want the user's hash and the attempt counter alone", k)
			}
		}
	})
}
