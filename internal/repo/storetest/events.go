package storetest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/store"
)

// Events reads every entry of the event stream key, oldest first (none when it is absent).
func Events(t testing.TB, s *store.Store, key string) []events.Event {
	t.Helper()
	entries, err := s.Client.Do(context.Background(), s.Client.B().Xrange().Key(key).Start("-").End("+").Build()).AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	out := make([]events.Event, 0, len(entries))
	for _, e := range entries {
		ev, err := events.FromEntry(e.ID, e.FieldValues)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// EventData decodes an event's data object.
func EventData(t *testing.T, e events.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("%s data %q: %v", e.Type, e.Data, err)
	}
	return m
}

// WantEvents checks that got are tenant's events of the given types and subjects, in order,
// and returns their data.
func WantEvents(t *testing.T, got []events.Event, tenant string, want ...[2]string) []map[string]any {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	data := make([]map[string]any, len(got))
	for i, w := range want {
		e := got[i]
		if string(e.Type) != w[0] || e.Subject != w[1] || e.Tenant != tenant {
			t.Fatalf("event %d = %s of %s (tenant %q), want %s of %s (tenant %q)", i, e.Type, e.Subject, e.Tenant, w[0], w[1], tenant)
		}
		data[i] = EventData(t, e)
	}
	return data
}

// ReportStreamBytes reports the streams' memory per entry (MEMORY USAGE / XLEN), when they
// hold any.
func ReportStreamBytes(b *testing.B, s *store.Store, keys []string) {
	b.Helper()
	ctx := context.Background()
	var bytes, n int64
	for _, key := range keys {
		m, _ := s.Client.Do(ctx, s.Client.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
		l, _ := s.Client.Do(ctx, s.Client.B().Xlen().Key(key).Build()).AsInt64()
		bytes, n = bytes+m, n+l
	}
	if n > 0 {
		b.ReportMetric(float64(bytes)/float64(n), "stream-B/event")
	}
}
