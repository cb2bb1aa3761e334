package casestore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The history reads a page strictly older than a stream id, in one round trip: pages of two
// walk every transition once, newest first, and the trimmed stream keeps only the newest.
// A position that is no stream id is a 400 naming `cursor`, never sent to Redis.
func TestCaseHistoryPagesByStreamID(t *testing.T) {
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 6)
		k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
		for range 7 { // 8 transitions, the stream keeps the newest 6: versions 8..3
			ch := change(k, "")
			ch.AssignedTeam = "team-x"
			if _, err := c.Assign(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		var versions []int64
		before := ""
		for pages := 0; ; pages++ {
			evs, err := c.History(ctx, "acme", k.ID, before, 2)
			if err != nil || pages > 5 {
				t.Fatalf("page %d: %+v %v", pages, evs, err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				versions = append(versions, ev.StateVersion)
			}
			before = evs[len(evs)-1].Pos
		}
		if want := []int64{8, 7, 6, 5, 4, 3}; !slices.Equal(versions, want) {
			t.Fatalf("walked versions %v, want %v", versions, want)
		}
		if evs, err := c.History(ctx, "acme", k.ID, "", 100); err != nil || len(evs) != 6 {
			t.Fatalf("one page of 100: %d entries, %v", len(evs), err)
		}
		for _, bad := range []string{"x", "1-", "-1", "+1-0", "18446744073709551616-0", "1-2-3"} {
			_, err := c.History(ctx, "acme", k.ID, bad, 2)
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.Validation || len(ae.Fields) != 1 || ae.Fields[0].Parameter != "query:cursor" {
				t.Errorf("position %q: %v, want a 400 naming cursor", bad, err)
			}
		}
	})
}
