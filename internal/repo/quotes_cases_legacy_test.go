package repo

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// Drafts and cases written by gateways before the tenant quotas live under their own hash tag
// (<prefix>:v1:quote:{<quoteId>}, <prefix>:v1:case:{<caseId>}). The fixtures below write them
// as those gateways' create scripts did.

// legacyQuote writes a DRAFT with one line item (quantity 2 × 100) under the legacy keys.
func legacyQuote(t *testing.T, s *store.Store, prefix, tenant string) (id string, keys []string) {
	t.Helper()
	ctx := context.Background()
	id = quotes.NewID()
	sum := Keys{Prefix: prefix}.Key("quote", id)
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	exp := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	for _, res := range s.Client.DoMulti(ctx,
		s.Client.B().Hset().Key(sum).FieldValue().FieldValue("schemaVersion", "2").FieldValue("quoteId", id).
			FieldValue("tenantId", tenant).FieldValue("customerId", "c-old").FieldValue("salesChannel", "web").
			FieldValue("currency", "EUR").FieldValue("status", "DRAFT").FieldValue("subtotalMinor", "200").
			FieldValue("discountMinor", "0").FieldValue("taxMinor", "0").FieldValue("totalMinor", "200").
			FieldValue("itemCount", "1").FieldValue("pricingVersion", "1").FieldValue("stateVersion", "2").
			FieldValue("createdAtMs", at).FieldValue("updatedAtMs", at).FieldValue("expiresAtMs", exp).Build(),
		s.Client.B().Pexpire().Key(sum).Milliseconds(time.Hour.Milliseconds()).Build(),
		s.Client.B().Hset().Key(sum+":items").FieldValue().
			FieldValue("a", `{"sku":"S","quantity":2,"unitPriceMinor":100,"description":""}`).Build(),
		s.Client.B().Pexpire().Key(sum+":items").Milliseconds(time.Hour.Milliseconds()).Build()) {
		if err := res.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return id, []string{sum, sum + ":items"}
}

// exists counts the keys that exist.
func exists(t *testing.T, s *store.Store, keys ...string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		c, err := s.Client.Do(context.Background(), s.Client.B().Exists().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += int(c)
	}
	return n
}

// TestQuotesLegacyKeyStillServed: a draft under its legacy key is read, written (TTL renewed
// on the legacy keys, nothing written under the tenant's tag), hidden from and untouched by
// another tenant, found by a keyed create whose derived id names it, and deleted; it is not
// counted in the tenant's quota.
func TestQuotesLegacyKeyStillServed(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		q, err := NewQuotes(s, QuoteOptions{Prefix: prefix, Hasher: qcHasher(t), TTL: 2 * time.Hour, MaxPerTenant: 1})
		if err != nil {
			t.Fatal(err)
		}
		id, keys := legacyQuote(t, s, prefix, "acme")
		d, err := q.Get(ctx, "acme", id)
		if err != nil || d.TotalMinor != 200 || d.CustomerID != "c-old" || d.StateVersion != 2 {
			t.Fatalf("get: %+v %v", d, err)
		}
		items, _, err := q.Items(ctx, "acme", id)
		if err != nil || len(items) != 1 || items[0].LineTotalMinor != 200 {
			t.Fatalf("items: %+v %v", items, err)
		}
		if _, err := q.Get(ctx, "other", id); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant's get: %v", err)
		}
		if _, err := q.Patch(ctx, "other", id, -1, quotes.Patch{TaxMinor: ptr[int64](1)}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant's patch: %v", err)
		}
		if err := q.Delete(ctx, "other", id); err != nil || exists(t, s, keys...) != 2 {
			t.Fatalf("another tenant's delete: %v, %d keys left", err, exists(t, s, keys...))
		}
		if d, err = q.PutItem(ctx, "acme", id, 2, quotes.Item{ID: "b", SKU: "T", Quantity: 1, UnitPriceMinor: 50}); err != nil || d.TotalMinor != 250 || d.StateVersion != 3 {
			t.Fatalf("item put: %+v %v", d, err)
		}
		if d, err = q.Patch(ctx, "acme", id, 3, quotes.Patch{TaxMinor: ptr[int64](10)}); err != nil || d.TotalMinor != 260 {
			t.Fatalf("patch: %+v %v", d, err)
		}
		if sum, it := qcPTTL(t, s, keys[0]), qcPTTL(t, s, keys[1]); sum < 119*time.Minute || it < 119*time.Minute {
			t.Fatalf("legacy TTLs after writes: %v %v, want the quote TTL (2h) again", sum, it)
		}
		if d, err = q.Submit(ctx, "acme", id, 4); err != nil || d.Status != quotes.Submitted {
			t.Fatalf("submit: %+v %v", d, err)
		}
		if n := liveObjects(t, s, prefix+":v1:quote:{"+q.h.TenantTag("acme")+"}:*"); n != 0 {
			t.Fatalf("%d keys under the tenant's tag after writes to a legacy draft", n)
		}
		// A keyed create whose derived id names the legacy draft answers it, writing nothing.
		got, err := q.Create(ctx, quotes.NewQuote{ID: id, Keyed: true, Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		if err != nil || got.ID != id || got.StateVersion != 5 {
			t.Fatalf("keyed create of the legacy id: %+v %v", got, err)
		}
		// Not counted: the tenant's quota (1) still has room.
		mustCreateQuote(t, q, "acme")
		if err := q.Delete(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
		if n := exists(t, s, keys...); n != 0 {
			t.Fatalf("%d legacy keys left after the delete", n)
		}
		if _, err := q.Get(ctx, "acme", id); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		if n := zcard(t, s, q.quotaKey("acme")); n != 1 {
			t.Fatalf("the tenant's count is %d, want the 1 new draft", n)
		}
	})
}

// legacyCase writes an OPEN case due at due under the legacy keys, in its tenant's due index
// and registered for the sweepers, as gateways before the tenant quotas did.
func legacyCase(t *testing.T, s *store.Store, c *Cases, tenant string, due time.Time) (id string, keys []string) {
	t.Helper()
	ctx := context.Background()
	id = cases.NewID()
	keys = c.legacyKeys(id)
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	tag := c.TenantTag(tenant)
	if err := c.register(ctx, tag); err != nil {
		t.Fatal(err)
	}
	for _, res := range s.Client.DoMulti(ctx,
		s.Client.B().Hset().Key(keys[0]).FieldValue().FieldValue("schemaVersion", "2").FieldValue("caseId", id).
			FieldValue("tenantId", tenant).FieldValue("subjectRef", "order/7").FieldValue("status", "OPEN").
			FieldValue("assignedTeam", "ops").FieldValue("escalationLevel", "0").FieldValue("dueAtMs", ms(due.UnixMilli())).
			FieldValue("stateVersion", "1").FieldValue("lastTransitionAtMs", at).FieldValue("lastTransitionReason", "old").
			FieldValue("createdAtMs", at).FieldValue("updatedAtMs", at).Build(),
		s.Client.B().Xadd().Key(keys[1]).Id("*").FieldValue().FieldValue("atMs", at).FieldValue("transition", "create").
			FieldValue("fromStatus", "").FieldValue("toStatus", "OPEN").FieldValue("escalationLevel", "0").
			FieldValue("assignedTeam", "ops").FieldValue("reason", "old").FieldValue("actor", "svc").FieldValue("stateVersion", "1").Build(),
		s.Client.B().Pexpire().Key(keys[0]).Milliseconds(time.Hour.Milliseconds()).Build(),
		s.Client.B().Pexpire().Key(keys[1]).Milliseconds(time.Hour.Milliseconds()).Build(),
		s.Client.B().Zadd().Key(c.dueKey(tag)).ScoreMember().ScoreMember(float64(due.UnixMilli()), id).Build(),
		s.Client.B().Pexpire().Key(c.dueKey(tag)).Milliseconds(time.Hour.Milliseconds()).Build()) {
		if err := res.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return id, keys
}

// TestCasesLegacyKeyStillServed: a case under its legacy key is read (case and history), moved
// (TTL renewed on the legacy keys, nothing written under the tenant's tag), hidden from another
// tenant, found by a keyed create whose derived id names it, and escalated by the sweeper as a
// new case is; it is not counted in the tenant's quota.
func TestCasesLegacyKeyStillServed(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		c, err := NewCases(s, CaseOptions{Prefix: prefix, Hasher: qcHasher(t), OpenTTL: 2 * time.Hour, ResolvedTTL: time.Hour, MaxPerTenant: 1})
		if err != nil {
			t.Fatal(err)
		}
		later, keys := legacyCase(t, s, c, "acme", time.Now().Add(time.Hour))
		k, err := c.Get(ctx, "acme", later)
		if err != nil || k.Status != cases.Open || k.SubjectRef != "order/7" {
			t.Fatalf("get: %+v %v", k, err)
		}
		if _, err := c.Get(ctx, "other", later); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant's get: %v", err)
		}
		if _, err := c.Escalate(ctx, cases.Change{Tenant: "other", ID: later, IfMatch: -1, Reason: "x", Actor: "a"}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant's escalate: %v", err)
		}
		if k, err = c.Escalate(ctx, change(k, "still late")); err != nil || k.EscalationLevel != 1 || k.StateVersion != 2 {
			t.Fatalf("escalate: %+v %v", k, err)
		}
		if h, err := c.History(ctx, "acme", later); err != nil || len(h) != 2 {
			t.Fatalf("history: %+v %v", h, err)
		}
		if _, err := c.History(ctx, "other", later); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant's history: %v", err)
		}
		if h, st := qcPTTL(t, s, keys[0]), qcPTTL(t, s, keys[1]); h < 119*time.Minute || st < 119*time.Minute {
			t.Fatalf("legacy TTLs after a transition: %v %v, want the open TTL (2h) again", h, st)
		}
		got, err := c.Create(ctx, cases.NewCase{ID: later, Keyed: true, Tenant: "acme", SubjectRef: "s", AssignedTeam: "t", DueAt: time.Now().Add(time.Hour), Reason: "r", Actor: "a"})
		if err != nil || got.ID != later || got.StateVersion != 2 {
			t.Fatalf("keyed create of the legacy id: %+v %v", got, err)
		}
		if n := liveObjects(t, s, prefix+":v1:case:{"+c.TenantTag("acme")+"}:*"); n != 0 {
			t.Fatalf("%d keys under the tenant's tag after writes to a legacy case", n)
		}
		// The sweeper escalates an overdue legacy case and an overdue new one (not counted:
		// the tenant's quota of 1 has room for the new one).
		overdue, _ := legacyCase(t, s, c, "acme", time.Now().Add(-time.Minute))
		fresh := mustCreateCase(t, c, "acme", time.Now().Add(-time.Minute))
		sw, err := cases.NewSweeper(c, time.Second, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := sw.SweepOnce(ctx)
		if err != nil || st.Escalated != 2 || st.Errors != 0 {
			t.Fatalf("sweep: %+v %v", st, err)
		}
		for _, id := range []string{overdue, fresh.ID} {
			if k, err := c.Get(ctx, "acme", id); err != nil || k.Status != cases.Escalated || k.LastTransitionReason != cases.AutoEscalationCause {
				t.Fatalf("after the sweep %s: %+v %v", id, k, err)
			}
		}
		if n := zcard(t, s, c.quotaKey("acme")); n != 1 {
			t.Fatalf("the tenant's count is %d, want the 1 new case", n)
		}
	})
}
