package casestore

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestCaseEventsIffTheChange: a case's create and each transition append their event to the
// tenant's stream with the request's origin; a replayed create, a stale If-Match, an invalid
// transition, one past the maximum level and a create over the tenant's quota append none.
func TestCaseEventsIffTheChange(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := events.WithOrigin(context.Background(), events.Origin{Actor: "token:T0", RequestID: "req-1"})
		c, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), MaxEscalation: 2, OpenTTL: 48 * time.Hour,
			ResolvedTTL: time.Hour, MaxPerTenant: 1})
		if err != nil {
			t.Fatal(err)
		}
		key := c.Keys.EventStream(c.TenantTag("acme"))
		in := cases.NewCase{ID: cases.NewID(), Tenant: "acme", SubjectRef: "order/42", AssignedTeam: "ops",
			DueAt: time.Now().Add(time.Hour), Reason: "late", Actor: "svc"}
		k, err := c.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, in); err != nil { // the idempotent replay: the same case
			t.Fatal(err)
		}
		_, err = c.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/43", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "late", Actor: "svc"})
		storetest.WantQuota(t, err, "cases", 1)
		ch := change(k, "why")
		ch.IfMatch = k.StateVersion + 5
		_, err = c.Escalate(ctx, ch)
		storetest.WantKind(t, err, apperr.PreconditionFailed)
		_, err = c.Reopen(ctx, change(k, "not resolved"))
		storetest.WantKind(t, err, apperr.InvalidStatus)
		for range 2 {
			if _, err := c.Escalate(ctx, change(k, "up")); err != nil {
				t.Fatal(err)
			}
		}
		_, err = c.Escalate(ctx, change(k, "past the max"))
		storetest.WantKind(t, err, apperr.MaxEscalation)
		as := change(k, "hand over")
		as.AssignedTeam, as.Assignee = "l2", "ana"
		if _, err := c.Assign(ctx, as); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Resolve(ctx, change(k, "done")); err != nil {
			t.Fatal(err)
		}
		_, err = c.Resolve(ctx, change(k, "again"))
		storetest.WantKind(t, err, apperr.InvalidStatus)
		if _, err := c.Reopen(ctx, change(k, "not done")); err != nil {
			t.Fatal(err)
		}
		got := storetest.Events(t, s, key)
		data := storetest.WantEvents(t, got, "acme", [2]string{"case.created", k.ID}, [2]string{"case.escalated", k.ID},
			[2]string{"case.escalated", k.ID}, [2]string{"case.assigned", k.ID}, [2]string{"case.resolved", k.ID},
			[2]string{"case.reopened", k.ID})
		move := func(from, to string, level float64, team string, assigned bool, v float64) map[string]any {
			return map[string]any{"status": to, "fromStatus": from, "level": level, "team": team, "assigned": assigned, "stateVersion": v}
		}
		esc := func(from string, level, v float64) map[string]any {
			m := move(from, "ESCALATED", level, "ops", false, v)
			m["auto"] = false
			return m
		}
		want := []map[string]any{
			{"status": "OPEN", "level": 0.0, "team": "ops", "assigned": false, "dueAtMs": float64(in.DueAt.UnixMilli())},
			esc("OPEN", 1, 2), esc("ESCALATED", 2, 3),
			move("ESCALATED", "ESCALATED", 2, "l2", true, 4),
			move("ESCALATED", "RESOLVED", 2, "l2", true, 5),
			move("RESOLVED", "OPEN", 2, "l2", true, 6),
		}
		for i, w := range want {
			if strings.Contains(string(got[i].Data), "ana") {
				t.Errorf("event %d data %s holds the assignee's raw id", i, got[i].Data)
			}
			for f, v := range w {
				if data[i][f] != v {
					t.Errorf("event %d (%s) data %v: %s = %v, want %v", i, got[i].Type, data[i], f, data[i][f], v)
				}
			}
			if len(data[i]) != len(w) {
				t.Errorf("event %d data %v, want only %v", i, data[i], w)
			}
			if got[i].Actor != "token:T0" || got[i].RequestID != "req-1" {
				t.Errorf("event %d actor %q request id %q", i, got[i].Actor, got[i].RequestID)
			}
		}
	})
}

// TestCaseAutoEscalateEventOnce: sweepers racing on one overdue case escalate it once and
// append one case.escalated, auto, by the system, in the case's tenant's stream.
func TestCaseAutoEscalateEventOnce(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 10)
		k := mustCreateCase(t, c, "acme", time.Now().Add(-time.Minute))
		tag := c.TenantTag("acme")
		var wg sync.WaitGroup
		outs := make([]cases.AutoOutcome, 16)
		for i := range outs {
			wg.Go(func() {
				o, err := c.AutoEscalate(ctx, tag, k.ID)
				if err != nil {
					t.Error(err)
				}
				outs[i] = o
			})
		}
		wg.Wait()
		n := 0
		for _, o := range outs {
			if o == cases.AutoEscalated {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("escalated %d times: %v", n, outs)
		}
		got := storetest.Events(t, s, c.Keys.EventStream(tag))
		data := storetest.WantEvents(t, got, "acme", [2]string{"case.created", k.ID}, [2]string{"case.escalated", k.ID})
		if e := got[1]; e.Actor != events.ActorSystem || data[1]["auto"] != true || data[1]["level"] != 1.0 || data[1]["fromStatus"] != "OPEN" {
			t.Fatalf("auto escalation event %+v data %v", e, data[1])
		}
	})
}
