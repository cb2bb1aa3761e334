package cases_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo/casestore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// newService builds the case service over the case store on s, with no Idempotency-Key store
// (these tests create without a key).
func newService(t *testing.T, s *store.Store, prefix string, historyMax int) *cases.Service {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	r, err := casestore.New(s, casestore.Options{Prefix: prefix, Hasher: h, MaxEscalation: 3,
		OpenTTL: 48 * time.Hour, ResolvedTTL: time.Hour, HistoryMax: historyMax})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cases.New(r, idempotency.New(nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func createCase(ctx context.Context, c *cases.Service, in cases.NewCase) (*cases.Case, error) {
	var k *cases.Case
	_, err := c.Create(ctx, in, idempotency.Key{}, func(c *cases.Case) (idempotency.Response, error) {
		k = c
		return idempotency.Response{Status: 201}, nil
	})
	return k, err
}

func mustCreate(t *testing.T, c *cases.Service, tenant string, due time.Time) *cases.Case {
	t.Helper()
	k, err := createCase(context.Background(), c, cases.NewCase{Tenant: tenant, SubjectRef: "order/42", AssignedTeam: "ops", DueAt: due, Reason: "late delivery", Actor: "svc"})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return k
}

func change(k *cases.Case, reason string) cases.Change {
	return cases.Change{Tenant: k.Tenant, ID: k.ID, IfMatch: -1, Reason: reason, Actor: "svc"}
}

// TestCaseHistoryIsBounded: the history keeps the newest entries up to its bound, and an
// assignment without a reason records REASSIGNED.
func TestCaseHistoryIsBounded(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newService(t, s, prefix, 5)
		k := mustCreate(t, c, "acme", time.Now().Add(time.Hour))
		for range 10 {
			ch := change(k, "")
			ch.AssignedTeam = "team-x"
			if _, err := c.Assign(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
		pg, err := c.History(ctx, "acme", k.ID, "", 100)
		h := pg.Items
		if err != nil || len(h) != 5 || h[0].StateVersion != 11 || h[0].Reason != "REASSIGNED" {
			t.Fatalf("history %d entries, first %+v, %v", len(h), h, err)
		}
	})
}

// TestCaseCreateValidates: a create with a bad field is refused before anything is written.
func TestCaseCreateValidates(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c := newService(t, s, prefix, 5)
		base := cases.NewCase{Tenant: "acme", SubjectRef: "order/1", AssignedTeam: "ops", DueAt: time.Now().Add(time.Hour), Reason: "r"}
		tests := []struct {
			name string
			edit func(*cases.NewCase)
			want *apperr.Kind
		}{
			{"due beyond the open TTL", func(n *cases.NewCase) { n.DueAt = time.Now().Add(72 * time.Hour) }, apperr.Unprocessable},
			{"due years ago", func(n *cases.NewCase) { n.DueAt = time.Now().Add(-2 * 365 * 24 * time.Hour) }, apperr.Unprocessable},
			{"bad team", func(n *cases.NewCase) { n.AssignedTeam = "o{p}s" }, apperr.Validation},
			{"bad subject", func(n *cases.NewCase) { n.SubjectRef = "order {1}" }, apperr.Validation},
			{"empty reason", func(n *cases.NewCase) { n.Reason = "" }, apperr.Validation},
			{"no tenant", func(n *cases.NewCase) { n.Tenant = "" }, apperr.Unauthenticated},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				in := base
				tt.edit(&in)
				_, err := createCase(ctx, c, in)
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %s", err, tt.want.Slug)
				}
			})
		}
		n := 0
		for _, node := range s.Client.Nodes() {
			keys, err := node.Do(ctx, node.B().Keys().Pattern(prefix+":*").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			n += len(keys)
		}
		if n != 0 {
			t.Fatalf("refused creates left %d keys", n)
		}
	})
}
