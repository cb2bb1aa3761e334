package repo

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// While a slot migrates, a confirmed write whose key has already left (or never was) on the
// migrating node runs again on the importing node (an ASK); its durable marker must not be
// left there while the migrating node still holds its own copy (written by another write less
// than a second before): MIGRATE then refuses that key with BUSYKEY and the migration stops
// half done (finding 9 of docs/ROBUSTNESS.md: the key on both masters was the marker).
func TestDurableMarkerDuringSlotMigration(t *testing.T) {
	t.Parallel()
	rc := testredis.StartReplicatedCluster(t, 0)
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{URL: rc.URL(), Timeout: 2 * time.Second,
		Durability: &store.Durability{Replicas: store.DurableAuto, Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	k := Keys{Prefix: testredis.Prefix(t)}
	const tag = "acme"
	marker, filler, fresh := k.Key("durable", tag), k.Key("quote", tag, "q1"), k.Key("quote", tag, "q2")
	slot, err := rc.KeySlot(ctx, marker)
	if err != nil {
		t.Fatal(err)
	}
	from, err := rc.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	// confirm is a confirmed write that finds nothing to do (a refusal): Ready on key, then
	// the marker.
	confirm := func(key string) error {
		return s.Durable.Run(ctx, s.Client, func(c rueidis.Client) (bool, error) {
			if err := store.Ready(ctx, c, key); err != nil {
				return false, err
			}
			return confirmMarker(ctx, c, marker)
		})
	}
	if err := s.Client.Do(ctx, s.Client.B().Set().Key(filler).Value("x").Ex(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := confirm(filler); err != nil { // the marker, on the migrating node
		t.Fatal(err)
	}
	var during error
	moved, err := rc.Migrate(ctx, testredis.Migration{Slot: slot, From: from, To: (from + 1) % len(rc.Nodes), Batch: 1,
		// The filler first, the marker last: between the two the slot is MIGRATING/IMPORTING.
		Order: func(left []string) []string {
			return slices.SortedFunc(slices.Values(left), func(a, b string) int { return boolInt(a == marker) - boolInt(b == marker) })
		},
		After: func(n int) {
			if n == 1 {
				during = confirm(fresh) // fresh is on neither node: ASK, run again on the importing one
			}
		}})
	if during != nil {
		t.Fatalf("the write during the migration: %v", during)
	}
	if err != nil {
		t.Fatalf("migration of slot %d stopped after %d keys: %v", slot, moved, err)
	}
	if n, err := rc.CountKeysInSlot(ctx, (from+1)%len(rc.Nodes), slot); err != nil || n < 1 {
		t.Fatalf("after the migration the new owner holds %d keys of the slot (%v)", n, err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
