package casestore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newTestCases(t *testing.T, s *store.Store, prefix string, historyMax int) *Store {
	t.Helper()
	c, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), MaxEscalation: 3,
		OpenTTL: 48 * time.Hour, ResolvedTTL: time.Hour, HistoryMax: historyMax})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreateCase(t *testing.T, c *Store, tenant string, due time.Time) *cases.Case {
	t.Helper()
	k, err := c.Create(context.Background(), cases.NewCase{Tenant: tenant, SubjectRef: "order/42", AssignedTeam: "ops", DueAt: due, Reason: "late delivery", Actor: "svc"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return k
}

func change(k *cases.Case, reason string) cases.Change {
	return cases.Change{Tenant: k.Tenant, ID: k.ID, IfMatch: -1, Reason: reason, Actor: "svc"}
}

func TestNewCasesValidatesOptions(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h := storetest.Hasher(t)
	for _, o := range []Options{{Hasher: h}, {Prefix: "p"}, {Prefix: "p", Hasher: h, MaxEscalation: 1000}, {Prefix: "p", Hasher: h, HistoryMax: -1}} {
		if _, err := New(s, o); !errors.Is(err, repo.ErrBadOptions) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}

func TestCaseLifecycle(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 100)
		k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
		if k.Status != cases.Open || k.EscalationLevel != 0 || k.StateVersion != 1 || k.LastTransitionReason != "late delivery" || k.SchemaVersion != repo.SchemaVersion {
			t.Fatalf("created %+v", k)
		}
		for level := 1; level <= 3; level++ {
			got, err := c.Escalate(ctx, change(k, "still late"))
			if err != nil || got.Status != cases.Escalated || got.EscalationLevel != level {
				t.Fatalf("escalate %d: %+v %v", level, got, err)
			}
		}
		_, err := c.Escalate(ctx, change(k, "again"))
		storetest.WantKind(t, err, apperr.MaxEscalation)
		ch := change(k, "")
		ch.AssignedTeam, ch.IfMatch = "billing", 1
		_, err = c.Assign(ctx, ch)
		storetest.WantKind(t, err, apperr.PreconditionFailed)
		ch.IfMatch = 4
		got, err := c.Assign(ctx, ch)
		if err != nil || got.AssignedTeam != "billing" || got.StateVersion != 5 || got.Status != cases.Escalated {
			t.Fatalf("assign: %+v %v", got, err)
		}
		got, err = c.Resolve(ctx, change(k, "refunded"))
		if err != nil || got.Status != cases.Resolved || got.ResolvedAt.IsZero() {
			t.Fatalf("resolve: %+v %v", got, err)
		}
		if ttl := storetest.PTTL(t, s, c.hashKey(k.ID)); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("resolved case TTL %s, want ≤ 1h", ttl)
		}
		if ttl := storetest.PTTL(t, s, c.historyKey(k.ID)); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("resolved history TTL %s, want ≤ 1h", ttl)
		}
		for _, f := range []func(context.Context, cases.Change) (*cases.Case, error){c.Escalate, c.Resolve} {
			_, err = f(ctx, change(k, "x"))
			storetest.WantKind(t, err, apperr.InvalidStatus)
		}
		got, err = c.Reopen(ctx, change(k, "customer called"))
		if err != nil || got.Status != cases.Open || !got.ResolvedAt.IsZero() || got.EscalationLevel != 3 {
			t.Fatalf("reopen: %+v %v", got, err)
		}
		if ttl := storetest.PTTL(t, s, c.hashKey(k.ID)); ttl < 47*time.Hour {
			t.Fatalf("reopened case TTL %s, want the open TTL", ttl)
		}
		_, err = c.Reopen(ctx, change(k, "x"))
		storetest.WantKind(t, err, apperr.InvalidStatus)
		h, err := c.History(ctx, "acme", k.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"reopen", "resolve", "assign", "escalate", "escalate", "escalate", "create"}
		if len(h) != len(want) {
			t.Fatalf("history %+v", h)
		}
		for i, ev := range h {
			if ev.Transition != want[i] || ev.StateVersion != int64(len(want)-i) || ev.Actor != "svc" {
				t.Fatalf("history[%d] = %+v, want %s", i, ev, want[i])
			}
		}
		if h[2].AssignedTeam != "billing" || h[1].ToStatus != cases.Resolved || h[1].FromStatus != cases.Escalated {
			t.Fatalf("history details %+v", h[:3])
		}
		// Another tenant sees nothing.
		_, err = c.Get(ctx, "other", k.ID)
		storetest.WantKind(t, err, apperr.NotFound)
		_, err = c.History(ctx, "other", k.ID, "", 100)
		storetest.WantKind(t, err, apperr.NotFound)
		ch = change(k, "x")
		ch.Tenant = "other"
		_, err = c.Escalate(ctx, ch)
		storetest.WantKind(t, err, apperr.NotFound)
		_, err = c.History(ctx, "acme", cases.NewID(), "", 100)
		storetest.WantKind(t, err, apperr.NotFound)
		storetest.RequireTTLs(t, s, prefix)
	})
}

// TestCaseConcurrentEscalations: 64 concurrent escalations never pass the maximum.
func TestCaseConcurrentEscalations(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 100)
		k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range errs {
			wg.Go(func() { _, errs[i] = c.Escalate(ctx, change(k, "storm")) })
		}
		wg.Wait()
		ok, atMax := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, apperr.MaxEscalation):
				atMax++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}
		got, err := c.Get(ctx, "acme", k.ID)
		if ok != 3 || atMax != 61 || err != nil || got.EscalationLevel != 3 || got.StateVersion != 4 {
			t.Fatalf("ok %d atMax %d final %+v %v", ok, atMax, got, err)
		}
	})
}

// TestCaseCreateChecksBounds: the store refuses what its keys and the case's lifetime cannot
// hold (the field rules are tested with the service, internal/cases), leaving nothing written.
func TestCaseCreateChecksBounds(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 5)
		base := cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "r"}
		tests := []struct {
			name string
			edit func(*cases.NewCase)
			want *apperr.Kind
		}{
			{"due beyond the open TTL", func(n *cases.NewCase) { n.DueAt = time.Now().Add(72 * time.Hour) }, apperr.Unprocessable},
			{"bad id", func(n *cases.NewCase) { n.ID = "c_{x}" }, apperr.Validation},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				in := base
				tt.edit(&in)
				_, err := c.Create(ctx, in)
				storetest.WantKind(t, err, tt.want)
			})
		}
		if n := storetest.RequireTTLs(t, s, prefix); n != 0 {
			t.Fatalf("refused creates left %d keys", n)
		}
	})
}

// TestCaseReadsPreviousSchema proves a v1 case (field `team`, no lastTransition* fields) is
// read and can still be transitioned.
func TestCaseReadsPreviousSchema(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 10)
		id := cases.NewID()
		storetest.HSet(t, s, c.hashKey(id), map[string]string{
			"schemaVersion": "1", "caseId": id, "tenantId": "acme", "subjectRef": "order/7", "status": "OPEN",
			"team": "ops-schema1", "escalationLevel": "1", "dueAtMs": "1700000000000", "stateVersion": "3",
			"createdAtMs": "1700000000000", "updatedAtMs": "1700000000000",
		})
		k, err := c.Get(ctx, "acme", id)
		if err != nil || k.AssignedTeam != "ops-schema1" || k.SchemaVersion != 1 || !k.LastTransitionAt.IsZero() {
			t.Fatalf("v1 read: %+v %v", k, err)
		}
		k, err = c.Escalate(ctx, cases.Change{Tenant: "acme", ID: id, IfMatch: 3, Reason: "r", Actor: "svc"})
		if err != nil || k.EscalationLevel != 2 || k.AssignedTeam != "ops-schema1" || k.LastTransitionReason != "r" {
			t.Fatalf("v1 escalate: %+v %v", k, err)
		}
		h, err := c.History(ctx, "acme", id, "", 100)
		if err != nil || len(h) != 1 || h[0].AssignedTeam != "ops-schema1" {
			t.Fatalf("v1 history: %+v %v", h, err)
		}
		// Assigning writes the new name and drops the old one: a v1 case taken through every
		// transition stays within the declared 15 fields.
		if k, err = c.Assign(ctx, cases.Change{Tenant: "acme", ID: id, IfMatch: k.StateVersion, Reason: "r", Actor: "svc", AssignedTeam: "ops-2"}); err != nil || k.AssignedTeam != "ops-2" {
			t.Fatalf("v1 assign: %+v %v", k, err)
		}
		if k, err = c.Resolve(ctx, cases.Change{Tenant: "acme", ID: id, IfMatch: k.StateVersion, Reason: "r", Actor: "svc"}); err != nil {
			t.Fatalf("v1 resolve: %+v %v", k, err)
		}
		fields, err := s.Client.Do(ctx, s.Client.B().Hkeys().Key(c.hashKey(id)).Build()).AsStrSlice()
		if err != nil || len(fields) > 15 || slices.Contains(fields, "team") {
			t.Fatalf("v1 case after assign and resolve holds %d fields %v (%v), want at most 15 and no \"team\"", len(fields), fields, err)
		}
		// repo.Corrupt objects are refused, by readers and by transition scripts.
		bad := cases.NewID()
		storetest.HSet(t, s, c.hashKey(bad), map[string]string{"schemaVersion": "2", "caseId": bad, "tenantId": "acme", "status": "OPEN",
			"stateVersion": "1", "escalationLevel": "many"})
		if _, err := c.Get(ctx, "acme", bad); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("corrupt read: %v", err)
		}
		if _, err := c.Escalate(ctx, cases.Change{Tenant: "acme", ID: bad, IfMatch: -1, Reason: "r"}); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("corrupt escalate: %v", err)
		}
	})
}

func TestCaseAutoEscalate(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 10)
		overdue := mustCreateCase(t, c, "acme", time.Now().Add(-time.Minute))
		later := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
		tags, now, err := c.SweepTenants(ctx)
		if err != nil || len(tags) != 1 || tags[0] != c.TenantTag("acme") || time.Since(now) > time.Minute {
			t.Fatalf("tenants %v %s %v", tags, now, err)
		}
		due, err := c.DueCases(ctx, tags[0], now, 10)
		if err != nil || len(due) != 1 || due[0] != overdue.ID {
			t.Fatalf("due %v %v", due, err)
		}
		steps := []struct {
			id   string
			want cases.AutoOutcome
		}{{overdue.ID, cases.AutoEscalated}, {overdue.ID, cases.AutoNotOpen}, {later.ID, cases.AutoNotDue}, {cases.NewID(), cases.AutoGone}}
		for _, st := range steps {
			if o, err := c.AutoEscalate(ctx, tags[0], st.id); err != nil || o != st.want {
				t.Fatalf("auto %s: %s %v, want %s", st.id, o, err, st.want)
			}
		}
		k, _ := c.Get(ctx, "acme", overdue.ID)
		if k.Status != cases.Escalated || k.LastTransitionReason != cases.AutoEscalationCause || k.EscalationLevel != 1 || k.AutoEscalatedAt.IsZero() {
			t.Fatalf("after auto: %+v", k)
		}
		// Resolved and reopened, the case is OPEN and overdue again but is auto-escalated only once.
		if _, err := c.Resolve(ctx, change(k, "done")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reopen(ctx, change(k, "not done")); err != nil {
			t.Fatal(err)
		}
		if o, err := c.AutoEscalate(ctx, tags[0], overdue.ID); err != nil || o != cases.AutoAlready {
			t.Fatalf("auto after reopen: %s %v", o, err)
		}
		if err := c.Undue(ctx, tags[0], overdue.ID); err != nil {
			t.Fatal(err)
		}
		if due, _ := c.DueCases(ctx, tags[0], now.Add(2*time.Hour), 10); len(due) != 1 || due[0] != later.ID {
			t.Fatalf("due after undue %v", due)
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

// hashKey and historyKey are the keys of a case of the tests' tenant, acme.
func (r *Store) hashKey(id string) string    { return r.caseKeys(r.TenantTag("acme"), id)[0] }
func (r *Store) historyKey(id string) string { return r.caseKeys(r.TenantTag("acme"), id)[1] }

// quotaKey is the tenant's quota set of live cases.
func (r *Store) quotaKey(tenant string) string { return r.caseKeys(r.TenantTag(tenant), "")[2] }
