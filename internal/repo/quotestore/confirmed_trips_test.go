package quotestore

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestConfirmedRoundTrips: a confirmed read of a draft that exists takes two round trips on
// its connection — the read with ROLE, then the touch with WAIT (and WAITAOF with append-only
// on) — and a read of a missing one confirms through the durable marker; a server that does
// not know the touch script yet gets it and confirms as well. A confirmed write takes two:
// the replicas' check (EXISTS with ROLE), then the script with WAIT and WAITAOF.
func TestConfirmedRoundTrips(t *testing.T) {
	t.Parallel()
	primary, _ := testredis.StartPrimaryWithReplica(t, "--appendonly", "yes")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rec *testredis.Recorder
	s, err := store.Open(ctx, store.Options{URL: primary.URL(), Timeout: time.Second,
		NewClient: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			rec = testredis.NewRecorder(c)
			return rec, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	q, err := New(s, Options{Prefix: testredis.Prefix(t), Hasher: storetest.Hasher(t), TTL: time.Hour, MaxItems: 10})
	if err != nil {
		t.Fatal(err)
	}
	d, err := q.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "cust-1", SalesChannel: "web", Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(f func()) ([]string, int64) {
		rec.Reset()
		f()
		var names []string
		for _, c := range rec.Commands() {
			names = append(names, c.Args[0])
		}
		return names, rec.Trips()
	}
	// The first read loads the touch script (NOSCRIPT: the gateway loads every script at start).
	read := func(id string) ([]string, int64) {
		return call(func() { _, _ = q.Get(ctx, "acme", id) })
	}
	if names, _ := read(d.ID); !slices.Contains(names, "EVAL") {
		t.Fatalf("first confirmed read sent %v, want the touch script loaded by EVAL after NOSCRIPT", names)
	}
	names, trips := read(d.ID)
	if want := []string{"HGETALL", "ROLE", "EVALSHA", "WAIT", "WAITAOF"}; !slices.Equal(names, want) || trips != 2 {
		t.Errorf("confirmed read of a draft sent %v in %d round trips, want %v in 2", names, trips, want)
	}
	patch := func() {
		if _, err := q.Patch(ctx, "acme", d.ID, -1, quotes.Patch{CustomerID: &d.ID}); err != nil {
			t.Errorf("patch: %v", err)
		}
	}
	call(patch) // loads the script
	names, trips = call(patch)
	if want := []string{"EXISTS", "ROLE", "EVALSHA", "WAIT", "WAITAOF"}; !slices.Equal(names, want) || trips != 2 {
		t.Errorf("confirmed patch sent %v in %d round trips, want %v in 2", names, trips, want)
	}
	names, _ = read("q_00000000000000000000000009")
	if !slices.Contains(names, "SET") || names[len(names)-2] != "WAIT" {
		t.Errorf("confirmed read of a missing draft sent %v, want the durable marker (SET) confirmed by WAIT", names)
	}
}
