package casestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestCaseListWalkUnderConcurrentWriters walks pages while 64 writers create cases and move
// others (escalate, assign, resolve, reopen): no case is listed twice, and every case that
// did not change during the walk is listed.
func TestCaseListWalkUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		if !b.Real() {
			t.Skip("64 writers are the real servers' load (the embedded store runs each script in-process)")
		}
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 20)
		const stable, volatile, writers = 120, 120, 64
		open := func(team string) *cases.Case {
			k, err := c.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: team,
				DueAt: time.Now().Add(time.Duration(rand.IntN(600)) * time.Minute), Reason: "r", Actor: "svc"})
			if err != nil {
				t.Error(err)
				return nil
			}
			return k
		}
		var keep []*cases.Case // never changed: every walk must list each (as its filters allow)
		for i := range stable {
			keep = append(keep, open([]string{"ops", "billing"}[i%2]))
		}
		var moving []*cases.Case // the writers' cases
		for range volatile {
			moving = append(moving, open("ops"))
		}
		if t.Failed() {
			t.FailNow()
		}
		var mu sync.Mutex
		stop := make(chan struct{})
		var writes atomic.Int64
		var wg sync.WaitGroup
		halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer halt() // also when a walk fails the test
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for {
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond): // a writer's pace; 64 of them keep Redis busy
					}
					mu.Lock()
					k := moving[r.IntN(len(moving))]
					mu.Unlock()
					var err error
					switch r.IntN(5) {
					case 0:
						if n := open([]string{"ops", "billing"}[r.IntN(2)]); n != nil {
							mu.Lock()
							moving = append(moving, n)
							mu.Unlock()
						}
					case 1:
						_, err = c.Escalate(ctx, change(k, "w"))
					case 2:
						ch := change(k, "w")
						ch.AssignedTeam, ch.Assignee = []string{"ops", "billing"}[r.IntN(2)], []string{"", "ana"}[r.IntN(2)]
						_, err = c.Assign(ctx, ch)
					case 3:
						_, err = c.Resolve(ctx, change(k, "w"))
					case 4:
						_, err = c.Reopen(ctx, change(k, "w"))
					}
					if err != nil && !refusal(err) {
						t.Errorf("writer: %v", err)
						return
					}
					writes.Add(1)
				}
			}()
		}
		walks := []cases.Query{
			{Order: cases.OrderUpdated, Limit: 7},
			{Order: cases.OrderDue, Limit: 5, Statuses: []string{cases.Open, cases.Escalated}},
			{Order: cases.OrderUpdated, Limit: 9, Team: "ops"},
			{Order: cases.OrderDue, Limit: 100},
		}
		before := writes.Load()
		listed := make([]map[string]bool, len(walks))
		for i, q := range walks {
			q.Tenant = "acme"
			ids, _ := walk(t, c, q) // fails on a case listed twice
			listed[i] = map[string]bool{}
			for _, id := range ids {
				listed[i][id] = true
			}
		}
		during := writes.Load() - before
		halt()
		if during < writers {
			t.Fatalf("only %d writes ran during the walks", during)
		}
		for i, q := range walks {
			for _, k := range keep {
				if q.Team != "" && k.AssignedTeam != q.Team {
					continue
				}
				if !listed[i][k.ID] {
					t.Errorf("walk %+v skipped case %s, unchanged during the walk", q, k.ID)
				}
			}
		}
		t.Logf("%s: %d writes during the walks", b.Name, during)
		storetest.IndexesMatchLive(t, s, c.indexKeys(c.TenantTag("acme")))
		storetest.RequireTTLs(t, s, prefix)
	})
}

// refusal reports whether err is a transition the case's state refuses (409), which the
// random writers expect.
func refusal(err error) bool {
	return errors.Is(err, apperr.InvalidStatus) || errors.Is(err, apperr.MaxEscalation)
}
