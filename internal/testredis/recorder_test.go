package testredis_test

import (
	"context"
	"slices"
	"testing"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The recorder counts calls, round trips and commands, keeps the commands in order (writes
// apart), calls After once a Do is answered, and forgets everything on Reset; the counter
// counts the same and keeps nothing.
func TestRecorder(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		for _, keep := range []bool{true, false} {
			rec := testredis.NewCounter(s.Client)
			if keep {
				rec = testredis.NewRecorder(s.Client)
			}
			var after []string
			rec.After = func(args []string) { after = append(after, args[0]) }
			c := rec.Client
			k := prefix + ":rec"
			// The key is the test's own, in no documented pattern: it must not outlive the test
			// (the keyspace audit after the suite would find it).
			t.Cleanup(func() { s.Client.Do(context.Background(), s.Client.B().Del().Key(k).Build()) })
			if err := rec.Do(ctx, c.B().Set().Key(k).Value("v").PxMilliseconds(60000).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			for _, r := range rec.DoMulti(ctx, c.B().Get().Key(k).Build(), c.B().Pttl().Key(k).Build()) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			if got := [3]int64{rec.Calls(), rec.Trips(), rec.Sent()}; got != [3]int64{2, 2, 3} {
				t.Errorf("keep=%v: calls, trips, sent = %v, want [2 2 3]", keep, got)
			}
			if !slices.Equal(after, []string{"SET"}) {
				t.Errorf("keep=%v: After saw %q, want [SET]", keep, after)
			}
			wantNames, wantWrites := []string{"SET", "GET", "PTTL"}, []string{"SET " + k + " v PX 60000"}
			if !keep {
				wantNames, wantWrites = []string{}, nil
			}
			var writes []string
			for _, w := range rec.Writes() {
				writes = append(writes, w.String())
			}
			if !slices.Equal(writes, wantWrites) {
				t.Errorf("keep=%v: writes %q, want %q", keep, writes, wantWrites)
			}
			if names := rec.Reset(); !slices.Equal(names, wantNames) {
				t.Errorf("keep=%v: names %q, want %q", keep, names, wantNames)
			}
			if got := [4]int64{rec.Calls(), rec.Trips(), rec.Sent(), int64(len(rec.Commands()))}; got != [4]int64{} {
				t.Errorf("keep=%v: after Reset %v, want zeros", keep, got)
			}
		}
	})
}
