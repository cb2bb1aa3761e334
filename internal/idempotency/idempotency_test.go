package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hashgate/hashgate/internal/idempotency"
)

// fakeStore records what the flow asks of a store; replay, when set, is what Claim answers.
type fakeStore struct {
	claims              []idempotency.Scope
	hashes              []string
	completed, released int
	replay              *idempotency.Response
	stored              idempotency.Response
}

func (f *fakeStore) Claim(_ context.Context, sc idempotency.Scope, requestHash, resourceID string) (*idempotency.Claim, error) {
	f.claims, f.hashes = append(f.claims, sc), append(f.hashes, requestHash)
	if f.replay != nil {
		return &idempotency.Claim{Replay: f.replay}, nil
	}
	return &idempotency.Claim{ResourceID: "planned-" + resourceID, Lease: idempotency.Lease{Held: "x"}}, nil
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
		r, err := idempotency.New(f, nil).Do(ctx, "createQuote", "acme", idempotency.Key{Request: 1}, "q_1", created(&ids))
		if err != nil || r.Replayed || len(ids) != 1 || ids[0] != "q_1" || len(f.claims) != 0 || f.completed != 0 {
			t.Fatalf("%+v %v ids %v store %+v", r, err, ids, f)
		}
	})
	t.Run("first use", func(t *testing.T) {
		f, ids := &fakeStore{}, []string(nil)
		r, err := idempotency.New(f, nil).Do(ctx, "createQuote", "acme", idempotency.Key{Value: &key, Request: map[string]int{"a": 1}}, "q_1", created(&ids))
		if err != nil || r.Replayed || len(ids) != 1 || ids[0] != "planned-q_1" || f.completed != 1 || string(f.stored.Body) != "planned-q_1" {
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
		r, err := idempotency.New(f, nil).Do(ctx, "createQuote", "acme", idempotency.Key{Value: &key, Request: 1}, "q_2", created(&ids))
		if err != nil || !r.Replayed || string(r.Body) != "first" || len(ids) != 0 || f.completed != 0 {
			t.Fatalf("%+v %v ids %v store %+v", r, err, ids, f)
		}
	})
	t.Run("failed create releases", func(t *testing.T) {
		f, refused := &fakeStore{}, errors.New("refused")
		_, err := idempotency.New(f, nil).Do(ctx, "createCase", "acme", idempotency.Key{Value: &key, Request: 1}, "c_1",
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
