package idemstore

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newTestIdem(t *testing.T, s *store.Store, prefix string, lease time.Duration) *Store {
	t.Helper()
	x, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), TTL: time.Hour, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestNewIdempotencyValidatesOptions(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	h := storetest.Hasher(t)
	for _, o := range []Options{{Hasher: h}, {Prefix: "p"}, {Prefix: "p", Hasher: h, Lease: time.Hour, TTL: time.Minute}} {
		if _, err := New(s, o); !errors.Is(err, repo.ErrBadOptions) {
			t.Errorf("%+v: err = %v", o, err)
		}
	}
}

func TestIdempotencyClaimCompleteReplay(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		x := newTestIdem(t, s, prefix, time.Minute)
		sc := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "key-{1}:with spaces"}
		h1, h2 := idempotency.RequestHash("createQuote", []byte(`{"a":1}`)), idempotency.RequestHash("createQuote", []byte(`{"a":2}`))
		id := quotes.NewID()
		cl, err := x.Claim(ctx, sc, h1, id)
		if err != nil || cl.Replay != nil || cl.ResourceID != id {
			t.Fatalf("claim: %+v %v", cl, err)
		}
		// While in flight: same body → 409 with Retry-After, other body → 422.
		_, err = x.Claim(ctx, sc, h1, quotes.NewID())
		storetest.WantKind(t, err, apperr.InFlight)
		if e, _ := apperr.As(err); e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
			t.Fatalf("in-flight Retry-After %s", e.RetryAfter)
		}
		_, err = x.Claim(ctx, sc, h2, quotes.NewID())
		storetest.WantKind(t, err, apperr.IdempotencyMismatch)
		ttlBefore := storetest.PTTL(t, s, x.markerKey(sc))
		body := []byte("{\"quoteId\":\"" + id + "\",\"note\":\"ü \\u003c\"}\n")
		if err := x.Complete(ctx, cl, idempotency.Response{Status: 201, Body: body, Location: "/v1/quotes/" + id, ETag: `"1"`}); err != nil {
			t.Fatal(err)
		}
		if ttl := storetest.PTTL(t, s, x.markerKey(sc)); ttl > ttlBefore || ttl < ttlBefore-time.Minute {
			t.Fatalf("completion changed the TTL: %s → %s", ttlBefore, ttl)
		}
		r, err := x.Claim(ctx, sc, h1, quotes.NewID())
		if err != nil || r.Replay == nil || !bytes.Equal(r.Replay.Body, body) || r.Replay.Status != 201 || r.Replay.ETag != `"1"` || r.Replay.Location != "/v1/quotes/"+id {
			t.Fatalf("replay: %+v %v", r, err)
		}
		_, err = x.Claim(ctx, sc, h2, quotes.NewID())
		storetest.WantKind(t, err, apperr.IdempotencyMismatch)
		// Keys are scoped by tenant and operation.
		for _, other := range []idempotency.Scope{{Tenant: "other", Operation: sc.Operation, Key: sc.Key}, {Tenant: "acme", Operation: "createCase", Key: sc.Key}} {
			if cl, err := x.Claim(ctx, other, h1, cases.NewID()); err != nil || cl.Replay != nil {
				t.Fatalf("scope %+v: %+v %v", other, cl, err)
			}
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

func TestIdempotencyReleaseAndTakeover(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		x := newTestIdem(t, s, prefix, 100*time.Millisecond)
		sc := idempotency.Scope{Tenant: "acme", Operation: "createCase", Key: "retry-me-please"}
		h := idempotency.RequestHash("createCase", []byte("x"))
		cl, err := x.Claim(ctx, sc, h, cases.NewID())
		if err != nil {
			t.Fatal(err)
		}
		// A refused request releases its claim: the key can be used again, even with another body.
		if err := x.Release(ctx, cl); err != nil {
			t.Fatal(err)
		}
		first, err := x.Claim(ctx, sc, idempotency.RequestHash("createCase", []byte("y")), cases.NewID())
		if err != nil || first.Replay != nil {
			t.Fatalf("after release: %+v %v", first, err)
		}
		// The first request "crashes": after its lease a retry takes over with the planned id.
		time.Sleep(250 * time.Millisecond)
		second, err := x.Claim(ctx, sc, first.Lease.RequestHash, cases.NewID())
		if err != nil || !second.TookOver || second.ResourceID != first.ResourceID {
			t.Fatalf("takeover: %+v %v", second, err)
		}
		// The slow first request completing late does not overwrite the new owner's marker.
		if err := x.Complete(ctx, first, idempotency.Response{Status: 201, Body: []byte("late")}); err != nil {
			t.Fatal(err)
		}
		if err := x.Complete(ctx, second, idempotency.Response{Status: 201, Body: []byte("winner")}); err != nil {
			t.Fatal(err)
		}
		r, err := x.Claim(ctx, sc, first.Lease.RequestHash, cases.NewID())
		if err != nil || r.Replay == nil || string(r.Replay.Body) != "winner" {
			t.Fatalf("replay: %+v %v", r, err)
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

// TestIdempotencyConcurrentClaims: of many simultaneous first requests exactly one proceeds.
func TestIdempotencyConcurrentClaims(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		x := newTestIdem(t, s, prefix, time.Minute)
		sc := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "same-key-everywhere"}
		h := idempotency.RequestHash("createQuote", []byte("b"))
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Go(func() { _, errs[i] = x.Claim(ctx, sc, h, quotes.NewID()) })
		}
		wg.Wait()
		claimed := 0
		for _, err := range errs {
			switch {
			case err == nil:
				claimed++
			case !errors.Is(err, apperr.InFlight):
				t.Errorf("unexpected: %v", err)
			}
		}
		if claimed != 1 {
			t.Fatalf("%d claims", claimed)
		}
	})
}

func TestIdempotencyReadsPreviousSchemaAndRefusesCorrupt(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		x := newTestIdem(t, s, prefix, time.Minute)
		h := idempotency.RequestHash("createQuote", []byte("v1"))
		set := func(sc idempotency.Scope, v string) {
			t.Helper()
			if err := s.Client.Do(ctx, s.Client.B().Set().Key(x.markerKey(sc)).Value(v).Px(time.Hour).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		// v1 COMPLETED: replayed.
		done := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "v1-completed"}
		set(done, `{"schemaVersion":1,"state":"COMPLETED","requestHash":"`+h+`","resourceId":"q_x","status":201,"body":"{}\n","createdAtMs":1,"updatedAtMs":2}`)
		r, err := x.Claim(ctx, done, h, quotes.NewID())
		if err != nil || r.Replay == nil || string(r.Replay.Body) != "{}\n" {
			t.Fatalf("v1 completed: %+v %v", r, err)
		}
		// v1 PROCESSING without a lease: its lease is createdAtMs + lease, long past → taken over.
		stale := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "v1-processing"}
		planned := quotes.NewID()
		set(stale, `{"schemaVersion":1,"state":"PROCESSING","requestHash":"`+h+`","resourceId":"`+planned+`","createdAtMs":1,"updatedAtMs":1}`)
		r, err = x.Claim(ctx, stale, h, quotes.NewID())
		if err != nil || !r.TookOver || r.ResourceID != planned {
			t.Fatalf("v1 processing: %+v %v", r, err)
		}
		for i, v := range []string{"not json", `{"schemaVersion":9,"state":"DONE","requestHash":"x"}`, `{"schemaVersion":2,"state":"DONE","requestHash":"` + h + `"}`} {
			sc := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "corrupt-" + string(rune('a'+i))}
			set(sc, v)
			if _, err := x.Claim(ctx, sc, h, quotes.NewID()); !errors.Is(err, repo.ErrCorrupt) {
				t.Fatalf("corrupt %q: %v", v, err)
			}
		}
	})
}

// TestIdempotencyAbandonLostClaim: a claim whose reply was lost (the call timed out and the
// claim ran late) would hold the key against the client's retry for a whole lease (409);
// abandon, sent after it by the same request, drops exactly that claim: not another request's
// claim, not a stored response.
func TestIdempotencyAbandonLostClaim(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		x := newTestIdem(t, s, prefix, time.Minute)
		sc := idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "lost-reply"}
		h1 := idempotency.RequestHash("createQuote", []byte(`{"a":1}`))
		id, key := quotes.NewID(), x.markerKey(sc)
		lostClaim := func(owner string) {
			t.Helper()
			set, member := x.quotaOf(key)
			if _, err := repo.RunScript(ctx, x.Client, x.Metrics, "idem_claim", "test claim", scriptClaim, []string{key, set},
				[]string{owner, h1, id, "60000", "3600000", "2", "", "", "10", member}); err != nil {
				t.Fatal(err)
			}
		}
		lostClaim("lostOwner1")
		_, err := x.Claim(ctx, sc, h1, id)
		storetest.WantKind(t, err, apperr.InFlight) // what the retry saw for a whole lease
		x.abandon(ctx, key, "someoneElse")
		_, err = x.Claim(ctx, sc, h1, id)
		storetest.WantKind(t, err, apperr.InFlight) // another owner's abandon leaves the claim alone
		x.abandon(ctx, key, "lostOwner1")
		cl, err := x.Claim(ctx, sc, h1, id)
		if err != nil || cl.Replay != nil || cl.ResourceID != id {
			t.Fatalf("retry after the abandon: %+v %v", cl, err)
		}
		if err := x.Complete(ctx, cl, idempotency.Response{Status: 201, Body: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
		owner := decodeOwner(t, cl.Lease.Held)
		x.abandon(ctx, key, owner) // a stored response is never dropped
		if r, err := x.Claim(ctx, sc, h1, id); err != nil || r.Replay == nil {
			t.Fatalf("the stored response went: %+v %v", r, err)
		}
		storetest.RequireTTLs(t, s, prefix)
	})
}

func decodeOwner(t *testing.T, held string) string {
	t.Helper()
	env, err := decodeEnvelope(held)
	if err != nil || env.Owner == "" {
		t.Fatalf("claim %q: %v", held, err)
	}
	return env.Owner
}

// TestLeaseFor: the lease follows the Redis timeout (what a retry of a timed-out
// create may wait), within 1 s and 30 s.
func TestLeaseFor(t *testing.T) {
	t.Parallel()
	for timeout, want := range map[time.Duration]time.Duration{
		10 * time.Millisecond: time.Second, 500 * time.Millisecond: 5 * time.Second, time.Minute: 30 * time.Second,
	} {
		if got := LeaseFor(timeout); got != want {
			t.Errorf("LeaseFor(%v) = %v, want %v", timeout, got, want)
		}
	}
}
