package casestore

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// walk lists every page of q (limit per page) and returns the case ids in the order listed,
// failing on a case listed twice; pages counts the round trips.
func walk(t *testing.T, c *Store, q cases.Query) (ids []string, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for {
		page, err := c.List(context.Background(), q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		pages++
		for _, k := range page.Items {
			if seen[k.ID] {
				t.Fatalf("case %s listed twice (query %+v)", k.ID, q)
			}
			seen[k.ID] = true
			ids = append(ids, k.ID)
		}
		if page.NextCursor == "" {
			return ids, pages
		}
		if pages > 10_000 {
			t.Fatal("the walk does not end")
		}
		q.Cursor = page.NextCursor
	}
}

// expect is what q lists out of all, in its order: updated newest first (ties: the greater
// id first), due earliest first (ties: the smaller id first).
func expect(all []*cases.Case, q cases.Query, now time.Time) []string {
	var out []*cases.Case
	for _, k := range all {
		switch {
		case len(q.Statuses) > 0 && !slices.Contains(q.Statuses, k.Status),
			q.Team != "" && k.AssignedTeam != q.Team,
			q.Assignee != "" && k.Assignee != q.Assignee,
			q.Level != nil && k.EscalationLevel != *q.Level,
			q.Subject != "" && k.SubjectRef != q.Subject,
			q.Overdue != nil && k.Overdue(now) != *q.Overdue:
			continue
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *cases.Case) int {
		if q.Order == cases.OrderDue {
			return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
		}
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(b.ID, a.ID))
	})
	ids := make([]string, len(out))
	for i, k := range out {
		ids[i] = k.ID
	}
	return ids
}

// seedCases opens n cases of tenant over two teams, three subjects, three assignees (one
// none) and due times from 5 hours ago to 5 hours ahead, then moves some of them: escalations
// (levels 1 and 2), resolutions, reassignments (another team drops the person) and one
// escalation by the sweeper.
func seedCases(t *testing.T, c *Store, tenant string, n int) {
	t.Helper()
	ctx := context.Background()
	teams, subjects, people := []string{"ops", "billing"}, []string{"order/1", "order/2", "order/3"}, []string{"", "ana", "bob"}
	var made []*cases.Case
	for i := range n {
		k, err := c.Create(ctx, cases.NewCase{Tenant: tenant, SubjectRef: subjects[i%3], AssignedTeam: teams[i%2], Assignee: people[i%3],
			DueAt: time.Now().Add(time.Duration(i%11-5) * time.Hour), Reason: "seed", Actor: "svc"})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, k)
	}
	for i, k := range made {
		var err error
		switch i % 7 {
		case 1:
			_, err = c.Escalate(ctx, change(k, "late"))
		case 2:
			if _, err = c.Escalate(ctx, change(k, "late")); err == nil {
				_, err = c.Escalate(ctx, change(k, "later"))
			}
		case 3:
			_, err = c.Resolve(ctx, change(k, "done"))
		case 4:
			ch := change(k, "")
			ch.AssignedTeam = "billing"
			if i%2 == 0 {
				ch.Assignee = "carol"
			}
			_, err = c.Assign(ctx, ch)
		case 5:
			if k.DueAt.Before(time.Now()) {
				_, err = c.AutoEscalate(ctx, c.TenantTag(tenant), k.ID)
			}
		}
		if err != nil {
			t.Fatalf("seed transition %d: %v", i, err)
		}
	}
}

// current reads every case of the tenant back (the truth the lists are checked against).
func current(t *testing.T, c *Store, tenant string) []*cases.Case {
	t.Helper()
	ids, _ := walk(t, c, cases.Query{Tenant: tenant, Order: cases.OrderUpdated, Limit: 100})
	var out []*cases.Case
	for _, id := range ids {
		k, err := c.Get(context.Background(), tenant, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

func TestCaseListEveryFilterAndOrder(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		c := newTestCases(t, s, prefix, 100)
		const n = 42
		seedCases(t, c, "acme", n)
		mustCreateCase(t, c, "other", time.Now().Add(time.Hour)) // another tenant's case is never listed
		all := current(t, c, "acme")
		if len(all) != n {
			t.Fatalf("the unfiltered walk lists %d cases, want %d", len(all), n)
		}
		level := func(l int) *int { return &l }
		yes, no := true, false
		queries := []cases.Query{
			{},
			{Statuses: []string{cases.Open}},
			{Statuses: []string{cases.Open, cases.Escalated}},
			{Statuses: []string{cases.Resolved}},
			{Team: "billing"},
			{Team: "ops", Statuses: []string{cases.Escalated}},
			{Assignee: "ana"},
			{Assignee: "carol", Team: "billing"},
			{Assignee: "nobody"},
			{Level: level(0)},
			{Level: level(2)},
			{Overdue: &yes},
			{Overdue: &no},
			{Overdue: &yes, Team: "ops"},
			{Subject: "order/2"},
			{Subject: "order/3", Statuses: []string{cases.Open, cases.Resolved}, Level: level(0)},
		}
		for _, base := range queries {
			for _, order := range []string{cases.OrderUpdated, cases.OrderDue} {
				for _, limit := range []int{3, 100} {
					q := base
					q.Tenant, q.Order, q.Limit = "acme", order, limit
					got, _ := walk(t, c, q)
					if want := expect(all, q, time.Now()); !slices.Equal(got, want) {
						t.Errorf("%+v:\n got %v\nwant %v", q, got, want)
					}
				}
			}
		}
		var sawAssignee, sawAuto bool
		for _, k := range all {
			sawAssignee = sawAssignee || k.Assignee == "carol"
			sawAuto = sawAuto || !k.AutoEscalatedAt.IsZero()
		}
		storetest.IndexesMatchLive(t, s, c.indexKeys(c.TenantTag("acme")))
		if !sawAssignee || !sawAuto {
			t.Fatalf("the seed made no reassignment with a person (%v) or no sweeper escalation (%v)", sawAssignee, sawAuto)
		}
	})
}

func TestCaseAssignReplacesTheAssignment(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 100)
		k, err := c.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/9", AssignedTeam: "ops", Assignee: "ana",
			DueAt: time.Now().Add(time.Hour), Reason: "r", Actor: "svc"})
		if err != nil || k.Assignee != "ana" {
			t.Fatalf("create with an assignee: %+v %v", k, err)
		}
		assign := func(team, person string) *cases.Case {
			ch := change(k, "")
			ch.AssignedTeam, ch.Assignee = team, person
			got, err := c.Assign(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := assign("ops", "bob"); got.Assignee != "bob" || got.AssignedTeam != "ops" {
			t.Fatalf("assign to bob: %+v", got)
		}
		if got := assign("billing", ""); got.Assignee != "" || got.AssignedTeam != "billing" {
			t.Fatalf("another team without a person keeps %q", got.Assignee)
		}
		if ids, _ := walk(t, c, cases.Query{Tenant: "acme", Assignee: "bob", Limit: 10, Order: cases.OrderUpdated}); len(ids) != 0 {
			t.Fatalf("bob's list still holds %v after the case moved to another team", ids)
		}
		if got := assign("billing", "carol"); got.Assignee != "carol" {
			t.Fatalf("assign to carol: %+v", got)
		}
		if _, err := c.Escalate(ctx, change(k, "late")); err != nil {
			t.Fatal(err)
		}
		if ids, _ := walk(t, c, cases.Query{Tenant: "acme", Assignee: "carol", Limit: 10, Order: cases.OrderDue}); !slices.Equal(ids, []string{k.ID}) {
			t.Fatalf("carol's queue after an escalation = %v, want the case (a transition keeps the person)", ids)
		}
		hist, err := c.History(ctx, "acme", k.ID, "", 10)
		if err != nil || hist[1].Assignee != "carol" || hist[2].Assignee != "" {
			t.Fatalf("history: %+v %v", hist, err)
		}
	})
}

func TestCaseListCursorFitsOnlyItsQuery(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		c := newTestCases(t, s, prefix, 100)
		seedCases(t, c, "acme", 12)
		q := cases.Query{Tenant: "acme", Team: "ops", Order: cases.OrderDue, Limit: 2}
		page, err := c.List(context.Background(), q)
		if err != nil || page.NextCursor == "" {
			t.Fatalf("first page: %+v %v", page, err)
		}
		for _, other := range []cases.Query{
			{Team: "billing", Order: cases.OrderDue},
			{Team: "ops", Order: cases.OrderUpdated},
			{Team: "ops", Order: cases.OrderDue, Statuses: []string{cases.Open}},
			{Tenant: "globex", Team: "ops", Order: cases.OrderDue},
		} {
			other.Tenant, other.Limit, other.Cursor = cmp.Or(other.Tenant, "acme"), 2, page.NextCursor
			_, err := c.List(context.Background(), other)
			storetest.WantKind(t, err, apperr.Validation)
		}
		for _, forged := range []string{"abc", "Y2FzZXM"} {
			q.Cursor = forged
			_, err := c.List(context.Background(), q)
			storetest.WantKind(t, err, apperr.Validation)
		}
	})
}

func TestCaseListExpiredCasesLeaveTheIndexes(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		long := newTestCases(t, s, prefix, 100)
		short, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), OpenTTL: time.Second, ResolvedTTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var gone []*cases.Case
		for i := range 5 {
			k, err := short.Create(ctx, cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", Assignee: []string{"", "ana"}[i%2],
				DueAt: time.Now().Add(-time.Hour), Reason: "r", Actor: "svc"})
			if err != nil {
				t.Fatal(err)
			}
			gone = append(gone, k)
		}
		if _, err := short.Escalate(ctx, change(gone[0], "late")); err != nil {
			t.Fatal(err)
		}
		var want []string
		for range 3 {
			want = append(want, mustCreateCase(t, long, "acme", time.Now().Add(time.Hour)).ID)
		}
		slices.Sort(want)
		keys := long.indexKeys(long.TenantTag("acme"))
		time.Sleep(1200 * time.Millisecond)
		if _, err := long.Get(ctx, "acme", gone[0].ID); err == nil {
			t.Fatal("an expired case is still served")
		}
		for _, order := range []string{cases.OrderUpdated, cases.OrderDue} {
			ids, _ := walk(t, long, cases.Query{Tenant: "acme", Order: order, Limit: 2})
			slices.Sort(ids)
			if !slices.Equal(ids, want) {
				t.Fatalf("listed %v after 5 cases expired, want the 3 live ones %v", ids, want)
			}
		}
		storetest.IndexesMatchLive(t, s, keys)
		if n := storetest.ZCard(t, s, long.caseKeys(long.TenantTag("acme"), "")[2]); n != 3 {
			t.Fatalf("the quota set holds %d cases, want the 3 live ones", n)
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

// TestCaseListAbsentLiveCaseIsTryAgain: a listed case whose hash is absent while its quota
// score is live (what a page sees on a slot's new master before the hash has moved) answers
// 503, and the indexes keep it: only an expired case leaves them.
func TestCaseListAbsentLiveCaseIsTryAgain(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newTestCases(t, s, prefix, 100)
		k := mustCreateCase(t, c, "acme", time.Now().Add(time.Hour))
		mustCreateCase(t, c, "acme", time.Now().Add(2*time.Hour))
		key := c.caseKeys(c.TenantTag("acme"), k.ID)[0]
		if err := s.Client.Do(ctx, s.Client.B().Del().Key(key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		_, err := c.List(ctx, cases.Query{Tenant: "acme", Order: cases.OrderDue, Limit: 10})
		if !store.IsUnavailable(err) {
			t.Fatalf("list with a live case's hash absent: %v, want unavailable (503)", err)
		}
		if n := storetest.ZCard(t, s, c.indexKeys(c.TenantTag("acme"))[2]); n != 2 {
			t.Fatalf("the index holds %d cases, want both (the absent one is live)", n)
		}
	})
}
