package quotestore

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkQuoteWrites compares a PATCH (no item scan) with an item PUT, whose script
// recomputes the subtotal over every line, at 1 and at 100 lines. It runs on standalone Redis 8
// when HASHGATE_TEST_REDIS8 is set, else on the embedded store.
func BenchmarkQuoteWrites(b *testing.B) {
	backend := testredis.Backends()[0]
	if r8 := testredis.Backends()[1]; r8.URL != "" {
		backend = r8
	}
	s := testredis.Open(b, backend)
	prefix := testredis.Prefix(b)
	ctx := context.Background()
	q, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(b)})
	if err != nil {
		b.Fatal(err)
	}
	for _, lines := range []int{1, 100} {
		d, err := q.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
		if err != nil {
			b.Fatal(err)
		}
		v := d.StateVersion
		for i := range lines {
			if _, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: fmt.Sprint("i", i), SKU: "S", Quantity: 2, UnitPriceMinor: 999}); err != nil {
				b.Fatal(err)
			}
			v++
		}
		b.Run(fmt.Sprintf("%s/patch/lines=%d", backend.Name, lines), func(b *testing.B) {
			for b.Loop() {
				if _, err := q.Patch(ctx, "acme", d.ID, v, quotes.Patch{TaxMinor: &v}); err != nil {
					b.Fatal(err)
				}
				v++
			}
		})
		b.Run(fmt.Sprintf("%s/item_put/lines=%d", backend.Name, lines), func(b *testing.B) {
			for b.Loop() {
				if _, err := q.PutItem(ctx, "acme", d.ID, v, quotes.Item{ID: "i0", SKU: "S", Quantity: 1 + v%5, UnitPriceMinor: 999}); err != nil {
					b.Fatal(err)
				}
				v++
			}
		})
		_ = q.Delete(ctx, "acme", d.ID)
	}
}

// durabilityRun is one configuration of the confirmed benchmarks.
type durabilityRun struct {
	name    string
	replica bool
	dur     store.Durability
}

// benchConfirmed runs op on one draft from 16 goroutines on a private Redis 8 (append-only,
// appendfsync always), each run's store with its durability, the replica started before the
// first run that needs one. Needs HASHGATE_REDIS8_SERVER.
func benchConfirmed(b *testing.B, runs []durabilityRun, op func(ctx context.Context, q *Store, d *quotes.Quote) error) {
	primary := testredis.StartServer(b)
	var replica *testredis.Server
	for _, run := range runs {
		if run.replica && replica == nil {
			replica = testredis.StartServer(b, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if err := testredis.WaitLinkUp(ctx, replica.Port); err != nil {
				b.Fatal(err)
			}
			cancel()
		}
		b.Run(run.name, func(b *testing.B) {
			dur := run.dur
			s := testredis.Open(b, testredis.Backend{Name: "private", Env: "private", URL: primary.URL()},
				func(o *store.Options) { o.Durability = &dur })
			q, err := New(s, Options{Prefix: testredis.Prefix(b), Hasher: storetest.Hasher(b)})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			d, err := q.Create(ctx, quotes.NewQuote{Tenant: "acme", CustomerID: "c", SalesChannel: "web", Currency: "EUR"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(8) // 16 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(ctx, q, d); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkConfirmedPatch measures what confirming every write costs (GATEWAY_DURABLE_WRITES):
// a PATCH (If-Match any version) without a replica, and with one: the writes unconfirmed
// (credentials), confirmed by WAIT alone (all, GATEWAY_DURABLE_AOF=off) and by WAIT and WAITAOF
// (all, the defaults).
func BenchmarkConfirmedPatch(b *testing.B) {
	benchConfirmed(b, []durabilityRun{
		{"no-replica/all", false, store.Durability{Replicas: store.DurableAuto}},
		{"replica/credentials", true, store.Durability{Replicas: store.DurableAuto, CredentialsOnly: true}},
		{"replica/all-aof-off", true, store.Durability{Replicas: store.DurableAuto, NoAOF: true}},
		{"replica/all", true, store.Durability{Replicas: store.DurableAuto}},
	}, func(ctx context.Context, q *Store, d *quotes.Quote) error {
		_, err := q.Patch(ctx, "acme", d.ID, -1, quotes.Patch{CustomerID: &d.ID})
		return err
	})
}

// BenchmarkConfirmedGet measures what confirming every read costs (GATEWAY_DURABLE_READS): a
// GET of one draft without a replica (nothing to confirm), and with one: unconfirmed (off),
// confirmed by WAIT alone (GATEWAY_DURABLE_AOF=off) and by WAIT and WAITAOF.
func BenchmarkConfirmedGet(b *testing.B) {
	benchConfirmed(b, []durabilityRun{
		{"no-replica/all", false, store.Durability{Replicas: store.DurableAuto}},
		{"replica/off", true, store.Durability{Replicas: store.DurableAuto, UnconfirmedReads: true}},
		{"replica/all-aof-off", true, store.Durability{Replicas: store.DurableAuto, NoAOF: true}},
		{"replica/all", true, store.Durability{Replicas: store.DurableAuto}},
	}, func(ctx context.Context, q *Store, d *quotes.Quote) error {
		_, err := q.Get(ctx, "acme", d.ID)
		return err
	})
}
