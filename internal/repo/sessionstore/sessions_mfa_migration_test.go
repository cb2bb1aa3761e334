package sessionstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A user's first MFA verify of a window while the user's slot migrates: every key of the user
// is on the importing node, which does not own the slot yet, and the attempt counter does not
// exist, so the verify script (which declares it) is refused with TRYAGAIN. Redis asks the
// client to retry later; the verify must then succeed once the slot has its new owner, not
// answer 503 for the rest of the move.
func TestSessionVerifyDuringSlotMigration(t *testing.T) {
	t.Parallel()
	for _, v := range sessMigrationVariants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cl, e := v.env(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tag := sessRand(t, 9)
			ref := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			id := sessRand(t, 16)
			e.challenge(ref, "acme", id, "m", time.Minute)
			slot, err := cl.KeySlot(ctx, e.r.devicesKey(tag))
			if err != nil {
				t.Fatal(err)
			}
			from, err := cl.Owner(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			to := (from + 1) % len(cl.Nodes)
			type verified struct {
				res *session.VerifyResult
				err error
			}
			done := make(chan verified, 1)
			m := testredis.Migration{Slot: slot, From: from, To: to, Batch: 100, After: func(int) {
				before := evalRejected(ctx, t, cl, to)
				go func() {
					res, _, err := e.verify(ref, "acme", id, "m")
					done <- verified{res, err}
				}()
				// The slot changes owner only once the importing node has refused the verify.
				for evalRejected(ctx, t, cl, to) == before {
					select {
					case v := <-done: // answered without being refused: nothing to wait for
						done <- v
						return
					case <-ctx.Done():
						t.Error("the verify never reached the importing node")
						return
					case <-time.After(time.Millisecond):
					}
				}
			}}
			if _, err := cl.Migrate(ctx, m); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			got := <-done
			if got.err != nil {
				t.Fatalf("verify while the user's slot moved: %v", got.err)
			}
			if got.res.Outcome != session.VerifyOK {
				t.Fatalf("verify while the user's slot moved: %s, want %s", got.res.Outcome, session.VerifyOK)
			}
		})
	}
}

// evalRejected is the number of EVALSHA calls node i refused before running them (a
// redirection or TRYAGAIN: INFO commandstats' rejected_calls).
func evalRejected(ctx context.Context, t *testing.T, cl *testredis.Cluster, i int) int {
	t.Helper()
	info, err := cl.Do(ctx, i, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		for kv := range strings.SplitSeq(strings.TrimPrefix(line, "cmdstat_evalsha:"), ",") {
			if v, ok := strings.CutPrefix(kv, "rejected_calls="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}
