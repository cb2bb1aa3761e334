package quotestore

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/testredis"
)

// BenchmarkQuoteCreate is one quote_create.lua call (with its quote.created append) on a private
// Redis 8 without persistence, reporting the server's time per script and the tenants'
// streams' bytes per event:
//
//	go test -run '^$' -bench BenchmarkQuoteCreate ./internal/repo/quotestore/
func BenchmarkQuoteCreate(b *testing.B) {
	s := testredis.PrivateStore(b)
	r, err := New(s, Options{Prefix: testredis.Prefix(b), Hasher: storetest.Hasher(b), MaxPerTenant: MaxPerTenant})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tenant := func(i int) string { return "bench-" + string(rune('a'+i%26)) } // 26 tenants: under each one's quota
	testredis.ResetScriptCost(b, s.Client)
	i := 0
	for b.Loop() {
		if _, err := r.Create(ctx, quotes.NewQuote{Tenant: tenant(i), CustomerID: "c", SalesChannel: "web", Currency: "EUR"}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(testredis.ScriptCost(b, s.Client), "server-µs/script")
	streams := make([]string, 26)
	for j := range streams {
		streams[j] = r.Keys.Key("events", r.Hasher.TenantTag(tenant(j)))
	}
	storetest.ReportStreamBytes(b, s, streams)
}
