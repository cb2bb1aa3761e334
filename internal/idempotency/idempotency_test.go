package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
)

// testIDs makes recognisable ids: q_fresh, and q_ + the derived bytes in hex.
var testIDs = idempotency.IDs{
	Fresh:   func() string { return "q_fresh" },
	Derived: func(sum [16]byte) string { return fmt.Sprintf("q_%x", sum) },
}

func newService(t *testing.T, f idempotency.Store) *idempotency.Service {
	t.Helper()
	return idempotency.New(f, hasherOf(t, 7), nil)
}

// fakeStore records what the flow asks of a store; replay, when set, is what Claim answers.
type fakeStore struct {
	claims              []idempotency.Scope
	hashes, planned     []string
	completed, released int
	replay              *idempotency.Response
	stored              idempotency.Response
}

func (f *fakeStore) Claim(_ context.Context, sc idempotency.Scope, requestHash, resourceID string) (*idempotency.Claim, error) {
	f.claims, f.hashes = append(f.claims, sc), append(f.hashes, requestHash)
	if f.replay != nil {
		return &idempotency.Claim{Replay: f.replay}, nil
	}
	f.planned = append(f.planned, resourceID)
	return &idempotency.Claim{ResourceID: resourceID, Lease: idempotency.Lease{Held: "x"}}, nil
}

func (f *fakeStore) Complete(_ context.Context, _ *idempotency.Claim, resp idempotency.Response) error {
	f.completed++
	f.stored = resp
	return nil
}

func (f *fakeStore) Release(context.Context, *idempotency.Claim) error {
	f.released++
	return nil
}

// TestDo walks the flow's branches: no key (no claim), a key (the claim's id, the response
// stored), a replay (create not run), a failed create (the claim released), and the request
// hash binding the operation and the canonical request.
func TestDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := "k-1"
	created := func(ids *[]string) func(string) (idempotency.Response, error) {
		return func(id string) (idempotency.Response, error) {
			*ids = append(*ids, id)
			return idempotency.Response{Status: 201, Body: []byte(id)}, nil
		}
	}

	t.Run("no key", func(t *testing.T) {
		f, ids := &fakeStore{}, []string(nil)
		r, err := newService(t, f).Do(ctx, "createQuote", "acme", idempotency.Key{Request: 1}, testIDs, created(&ids))
		if err != nil || r.Replayed || len(ids) != 1 || ids[0] != "q_fresh" || len(f.claims) != 0 || f.completed != 0 {
			t.Fatalf("%+v %v ids %v store %+v", r, err, ids, f)
		}
	})
	t.Run("first use", func(t *testing.T) {
		f, ids := &fakeStore{}, []string(nil)
		r, err := newService(t, f).Do(ctx, "createQuote", "acme", idempotency.Key{Value: &key, Request: map[string]int{"a": 1}}, testIDs, created(&ids))
		if err != nil || r.Replayed || len(ids) != 1 || ids[0] != f.planned[0] || f.completed != 1 || string(f.stored.Body) != f.planned[0] {
			t.Fatalf("%+v %v ids %v store %+v", r, err, ids, f)
		}
		if want := (idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: key}); f.claims[0] != want {
			t.Fatalf("scope %+v, want %+v", f.claims[0], want)
		}
		if f.hashes[0] != idempotency.RequestHash("createQuote", []byte(`{"a":1}`)) {
			t.Fatalf("request hash %s is not over the canonical JSON", f.hashes[0])
		}
	})
	t.Run("replay", func(t *testing.T) {
		f, ids := &fakeStore{replay: &idempotency.Response{Status: 201, Body: []byte("first")}}, []string(nil)
		r, err := newService(t, f).Do(ctx, "createQuote", "acme", idempotency.Key{Value: &key, Request: 1}, testIDs, created(&ids))
		if err != nil || !r.Replayed || string(r.Body) != "first" || len(ids) != 0 || f.completed != 0 {
			t.Fatalf("%+v %v ids %v store %+v", r, err, ids, f)
		}
	})
	t.Run("failed create releases", func(t *testing.T) {
		f, refused := &fakeStore{}, errors.New("refused")
		_, err := newService(t, f).Do(ctx, "createCase", "acme", idempotency.Key{Value: &key, Request: 1}, testIDs,
			func(string) (idempotency.Response, error) { return idempotency.Response{}, refused })
		if !errors.Is(err, refused) || f.released != 1 || f.completed != 0 {
			t.Fatalf("err %v store %+v", err, f)
		}
	})
	t.Run("hash binds the operation", func(t *testing.T) {
		if idempotency.RequestHash("createQuote", []byte("x")) == idempotency.RequestHash("createCase", []byte("x")) {
			t.Fatal("same hash for two operations")
		}
	})
}

// TestDerivedIDs: a keyed create's id is a function of the tenant, the operation, the key and
// the request, so every attempt of one keyed request (a retry after a 503 whose create ran
// late included) plans the same id; any other tenant, operation, key or request plans another.
func TestDerivedIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plan := func(op, tenant, key string, req any) string {
		t.Helper()
		f := &fakeStore{}
		if _, err := newService(t, f).Do(ctx, op, tenant, idempotency.Key{Value: &key, Request: req}, testIDs,
			func(id string) (idempotency.Response, error) { return idempotency.Response{Status: 201}, nil }); err != nil {
			t.Fatal(err)
		}
		return f.planned[0]
	}
	base := plan("createQuote", "acme", "k-1", map[string]int{"a": 1})
	if again := plan("createQuote", "acme", "k-1", map[string]int{"a": 1}); again != base {
		t.Fatalf("the same keyed request planned %s, then %s", base, again)
	}
	for name, other := range map[string]string{
		"tenant":    plan("createQuote", "globex", "k-1", map[string]int{"a": 1}),
		"operation": plan("createCase", "acme", "k-1", map[string]int{"a": 1}),
		"key":       plan("createQuote", "acme", "k-2", map[string]int{"a": 1}),
		"request":   plan("createQuote", "acme", "k-1", map[string]int{"a": 2}),
	} {
		if other == base {
			t.Errorf("another %s planned the same id %s", name, base)
		}
	}
	other, err := idempotency.New(nil, hasherOf(t, 8), nil).DerivedID(testIDs, "createQuote", "acme", "k-1",
		idempotency.RequestHash("createQuote", []byte(`{"a":1}`)))
	if err != nil || other == base {
		t.Errorf("another HMAC key derived %s (%v), want an id other than %s", other, err, base)
	}
	if _, err := idempotency.New(nil, nil, nil).DerivedID(testIDs, "createQuote", "acme", "k-1", "h"); !errors.Is(err, idempotency.ErrNoHasher) {
		t.Errorf("no hasher: %v, want ErrNoHasher", err)
	}
}

func hasherOf(t *testing.T, b byte) *keyhash.Hasher {
	t.Helper()
	h, err := keyhash.New(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
