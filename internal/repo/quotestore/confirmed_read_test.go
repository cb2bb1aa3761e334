package quotestore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestReadsConfirmedAsWrites: a create whose confirmation fails (the replica frozen: 503) may
// still be on the primary, and a failover may undo it. A read confirmed as a write is
// (GATEWAY_DURABLE_READS=all, the default) answers 503 too while the replica cannot confirm, so
// no client sees the draft before it is known to survive; with the setting off the read shows
// it at once (ROBUSTNESS.md, finding 5: the reads the quotes and cases models flagged). Once
// the replica answers again, the confirmed read shows it.
func TestReadsConfirmedAsWrites(t *testing.T) {
	t.Parallel()
	primary, replica := testredis.StartPrimaryWithReplica(t)
	open := func(unconfirmedReads bool) *store.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: time.Second,
			Durability: &store.Durability{Replicas: 1, Timeout: 300 * time.Millisecond, NoAOF: true, UnconfirmedReads: unconfirmedReads}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	prefix, h := testredis.Prefix(t), storetest.Hasher(t)
	build := func(s *store.Store) *Store {
		q, err := New(s, Options{Prefix: prefix, Hasher: h, TTL: time.Hour, MaxItems: 10})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	confirmed, unconfirmed := build(open(false)), build(open(true))
	ctx := context.Background()
	newQuote := func(id string) quotes.NewQuote {
		return quotes.NewQuote{ID: id, Tenant: "acme", CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"}
	}
	// The replica in sync: a confirmed create succeeds.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := confirmed.Create(ctx, newQuote("q_00000000000000000000000001")); err != nil; _, err = confirmed.Create(ctx, newQuote("q_00000000000000000000000001")) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never confirmed a create: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := confirmed.Get(ctx, "acme", "q_00000000000000000000000001"); err != nil {
		t.Fatalf("confirmed read with the replica in sync: %v", err)
	}

	replica.Pause()
	const late = "q_00000000000000000000000002"
	if _, err := confirmed.Create(ctx, newQuote(late)); !errors.Is(err, storeerr.ErrUnavailable) {
		t.Fatalf("create with the replica frozen: %v, want unavailable (503)", err)
	}
	if _, err := unconfirmed.Get(ctx, "acme", late); err != nil {
		t.Fatalf("unconfirmed read of the draft whose create answered 503: %v, want it shown (the primary has it)", err)
	}
	start := time.Now()
	for name, read := range map[string]func() error{
		"get":  func() error { _, err := confirmed.Get(ctx, "acme", late); return err },
		"list": func() error { _, err := confirmed.List(ctx, quotes.ListQuery{Tenant: "acme", Limit: 10}); return err },
		"items": func() error {
			_, _, err := confirmed.Items(ctx, "acme", late)
			return err
		},
	} {
		if err := read(); !errors.Is(err, storeerr.ErrUnavailable) {
			t.Errorf("confirmed %s with the replica frozen: %v, want unavailable (503)", name, err)
		}
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("three confirmed reads took %v with the replica frozen, want each within the store's timeout", took)
	}
	// Not found is confirmed too: a missing draft may stand on an unconfirmed delete.
	if _, err := confirmed.Get(ctx, "acme", "q_00000000000000000000000009"); !errors.Is(err, storeerr.ErrUnavailable) || errors.Is(err, apperr.NotFound) {
		t.Errorf("confirmed read of a missing draft with the replica frozen: %v, want unavailable", err)
	}

	replica.Resume()
	deadline = time.Now().Add(10 * time.Second)
	for _, err := confirmed.Get(ctx, "acme", late); err != nil; _, err = confirmed.Get(ctx, "acme", late) {
		if time.Now().After(deadline) {
			t.Fatalf("confirmed read after the replica woke: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
