package cases_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo/casestore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newCases(t *testing.T, s *store.Store, prefix string) *casestore.Store {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	c, err := casestore.New(s, casestore.Options{Prefix: prefix, Hasher: h, OpenTTL: 24 * time.Hour, ResolvedTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, c *casestore.Store, tenant string, due time.Time) string {
	t.Helper()
	k, err := c.Create(context.Background(), cases.NewCase{Tenant: tenant, SubjectRef: "order/1", AssignedTeam: "ops", DueAt: due, Reason: "r", Actor: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	return k.ID
}

func TestNewSweeperValidates(t *testing.T) {
	t.Parallel()
	if _, err := cases.NewSweeper(nil, time.Second, nil, nil); !errors.Is(err, cases.ErrConfig) {
		t.Fatalf("nil cases: %v", err)
	}
	if _, err := cases.NewSweeper(&casestore.Store{}, time.Nanosecond, nil, nil); !errors.Is(err, cases.ErrConfig) {
		t.Fatalf("tiny interval: %v", err)
	}
}

// TestRacingSweepersEscalateOnce: two sweepers racing over the same due indexes escalate each
// overdue case exactly once and leave cases that are not due alone.
func TestRacingSweepersEscalateOnce(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newCases(t, s, prefix)
		tenants := map[string][]string{} // tenant → overdue case ids
		var notDue []string
		for i := range 3 {
			tenant := fmt.Sprintf("tenant-%d", i)
			for j := range 9 {
				tenants[tenant] = append(tenants[tenant], create(t, c, tenant, time.Now().Add(-time.Duration(j+1)*time.Minute)))
			}
			notDue = append(notDue, create(t, c, tenant, time.Now().Add(time.Hour)))
		}
		sweepers := make([]*cases.Sweeper, 2)
		for i := range sweepers {
			sw, err := cases.NewSweeper(c, time.Second, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			cases.SetBatch(sw, 4) // several batches per tenant
			sweepers[i] = sw
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total cases.Stats
		)
		for _, sw := range sweepers {
			wg.Go(func() {
				for range 3 {
					st, err := sw.SweepOnce(ctx)
					if err != nil {
						t.Errorf("sweep: %v", err)
					}
					mu.Lock()
					total.Escalated += st.Escalated
					total.Errors += st.Errors
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if total.Escalated != 27 || total.Errors != 0 {
			t.Fatalf("escalated %d (errors %d), want 27", total.Escalated, total.Errors)
		}
		for tenant, ids := range tenants {
			for _, id := range ids {
				k, err := c.Get(ctx, tenant, id)
				if err != nil || k.Status != cases.Escalated || k.EscalationLevel != 1 || k.LastTransitionReason != "auto_escalate" {
					t.Fatalf("case %s: %+v %v", id, k, err)
				}
				h, err := c.History(ctx, tenant, id, "", 100)
				if err != nil {
					t.Fatal(err)
				}
				autos := 0
				for _, ev := range h {
					if ev.Transition == "auto_escalate" {
						autos++
						// One spelling: the reason the sweeper records is the transition's name.
						if ev.Reason != ev.Transition {
							t.Fatalf("case %s: auto_escalate recorded with reason %q", id, ev.Reason)
						}
					}
				}
				if autos != 1 {
					t.Fatalf("case %s auto-escalated %d times", id, autos)
				}
			}
			if due, err := c.DueCases(ctx, c.TenantTag(tenant), time.Now(), 100); err != nil || len(due) != 0 {
				t.Fatalf("due index still holds %v (%v)", due, err)
			}
		}
		for i, id := range notDue {
			k, err := c.Get(ctx, fmt.Sprintf("tenant-%d", i), id)
			if err != nil || k.Status != cases.Open {
				t.Fatalf("not-due case touched: %+v %v", k, err)
			}
		}
		requireTTLs(t, s, prefix)
	})
}

// TestRunEscalatesInTheBackground drives Run until an overdue case is escalated, then stops it.
func TestRunEscalatesInTheBackground(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		c := newCases(t, s, prefix)
		id := create(t, c, "acme", time.Now().Add(-time.Second))
		sw, err := cases.NewSweeper(c, 20*time.Millisecond, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { sw.Run(ctx); close(stopped) }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			k, err := c.Get(context.Background(), "acme", id)
			if err == nil && k.Status == cases.Escalated {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not escalated: %+v %v", k, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-stopped
	})
}

func requireTTLs(t *testing.T, s *store.Store, prefix string) {
	t.Helper()
	ctx := context.Background()
	for addr, node := range s.Client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan %s: %v", addr, err)
			}
			for _, k := range e.Elements {
				if ttl, err := node.Do(ctx, node.B().Pttl().Key(k).Build()).AsInt64(); err != nil || ttl <= 0 {
					t.Errorf("key %s: PTTL %d %v", k, ttl, err)
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
}
