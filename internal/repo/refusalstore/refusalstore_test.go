package refusalstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/storetest"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func newStore(t *testing.T, s *store.Store, prefix string) *Store {
	t.Helper()
	r, err := New(s, Options{Prefix: prefix, Hasher: storetest.Hasher(t), Retention: events.Retention{MaxAge: time.Hour, MaxLen: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startOfWindow waits until a window of length w has just begun (local clock: the local Redis
// shares it), so what a test records falls in one window.
func startOfWindow(w time.Duration) {
	now := time.Now()
	time.Sleep(now.Truncate(w).Add(w + 20*time.Millisecond).Sub(now))
}

// flushUntil flushes every aggregator until none holds a window, or fails after 10 s.
func flushUntil(t *testing.T, rs ...*events.Refusals) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		busy := 0
		for _, r := range rs {
			if err := r.Flush(context.Background(), false); err != nil {
				t.Fatal(err)
			}
			busy += r.Pending()
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d windows still pending", busy)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRefusalsOneEventPerWindowAcrossGateways: two gateways (two aggregators on one Redis)
// refuse 500 requests of one caller under one policy in one window, 300 and 200; another caller
// and another policy are refused too. Once the window and its grace pass, the tenant's stream
// holds exactly one ratelimit.refused event per (subject, policy) with the count of both
// gateways together (500), the window's bounds and the policy's limit, the first refused
// request's origin; a count for that window arriving after its event is in none (and is not
// a second event); the window's total key has a TTL and the kit's schema version.
func TestRefusalsOneEventPerWindowAcrossGateways(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		st := newStore(t, s, prefix)
		const window = time.Second
		var gws []*events.Refusals
		for range 2 {
			// a 2 s grace: both gateways add their counts within it, on a loaded machine too
			r, err := events.NewRefusals(st, events.RefusalOptions{Window: window, Grace: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			gws = append(gws, r)
		}
		ctx := context.Background()
		ref := func(subject, policy string) events.Refusal {
			return events.Refusal{Type: events.RateLimitRefused, Tenant: "acme", Subject: subject, Actor: "token:" + subject,
				Name: policy, Limit: 600, PolicyWindow: time.Hour, RequestID: "req-" + subject, TraceID: "trace-1"}
		}
		startOfWindow(window)
		for i := range 500 {
			gws[i%5/3].Record(ctx, ref("tok1", "token")) // 300 on the first, 200 on the second
		}
		gws[1].Record(ctx, ref("tok1", "tenant"))
		gws[0].Record(ctx, ref("tok2", "token"))
		gws[0].Record(ctx, ref("tok2", "token"))
		flushUntil(t, gws...)

		key := repo.Keys{Prefix: prefix}.EventStream(st.Hasher.TenantTag("acme"))
		got := storetest.Events(t, s, key)
		counts := map[string]float64{}
		for _, e := range got {
			d := storetest.EventData(t, e)
			k := fmt.Sprintf("%s %s %s", e.Type, e.Subject, d["policy"])
			if _, dup := counts[k]; dup {
				t.Fatalf("two events for %s: %+v", k, got)
			}
			counts[k] = d["count"].(float64)
			if d["windowMs"] != float64(window.Milliseconds()) || d["limit"] != float64(600) || d["policyWindowMs"] != float64(time.Hour.Milliseconds()) ||
				e.Actor != "token:"+e.Subject || e.RequestID != "req-"+e.Subject || e.TraceID != "trace-1" {
				t.Errorf("event %+v data %v", e, d)
			}
			if start := int64(d["windowStartMs"].(float64)); start%window.Milliseconds() != 0 || e.Time.UnixMilli() < start+window.Milliseconds() {
				t.Errorf("event at %v for the window from %d", e.Time, start)
			}
		}
		want := map[string]float64{"ratelimit.refused tok1 token": 500, "ratelimit.refused tok1 tenant": 1, "ratelimit.refused tok2 token": 2}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Fatalf("events %v, want %v", counts, want)
		}

		// A count of that window after its event: in none.
		w := events.RefusalWindow{Refusal: ref("tok1", "token"), Length: window}
		w.StartMs = int64(storetest.EventData(t, got[0])["windowStartMs"].(float64))
		w.DueMs, w.ExpireMs = w.StartMs+window.Milliseconds(), time.Now().Add(time.Minute).UnixMilli()
		if out, _, err := st.Add(ctx, w, 7); err != nil || out != events.RefusalAlready {
			t.Fatalf("late add: %v %v", out, err)
		}
		if n := len(storetest.Events(t, s, key)); n != len(got) {
			t.Fatalf("%d events after a late add, want %d", n, len(got))
		}
		storetest.RequireTTLs(t, s, prefix)
		v, err := s.Client.Do(ctx, s.Client.B().Hget().Key(st.Key(w)).Field("schemaVersion").Build()).ToString()
		if err != nil || v != fmt.Sprint(repo.SchemaVersion) {
			t.Fatalf("schemaVersion %q (%v), want %d", v, err, repo.SchemaVersion)
		}
	})
}

// TestRefusalsNoEventBeforeDue: counts added before the window's due time write nothing; the
// first call at or after it writes the one event, and a quota refusal's data names the quota.
func TestRefusalsNoEventBeforeDue(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		st := newStore(t, s, prefix)
		ctx := context.Background()
		now := time.Now().UnixMilli()
		w := events.RefusalWindow{Refusal: events.Refusal{Type: events.QuotaRefused, Tenant: "acme", Subject: "tok9", Actor: "token:tok9",
			Name: "quotes", Limit: 10}, StartMs: now - 1000, Length: time.Second, DueMs: now + 400, ExpireMs: now + 60000}
		for range 3 {
			if out, _, err := st.Add(ctx, w, 2); err != nil || out != events.RefusalPending {
				t.Fatalf("before due: %v %v", out, err)
			}
		}
		key := repo.Keys{Prefix: prefix}.EventStream(st.Hasher.TenantTag("acme"))
		if n := len(storetest.Events(t, s, key)); n != 0 {
			t.Fatalf("%d events before due", n)
		}
		time.Sleep(500 * time.Millisecond)
		if out, _, err := st.Add(ctx, w, 0); err != nil || out != events.RefusalWritten {
			t.Fatalf("at due: %v %v", out, err)
		}
		if out, _, err := st.Add(ctx, w, 0); err != nil || out != events.RefusalAlready {
			t.Fatalf("after the event: %v %v", out, err)
		}
		d := storetest.WantEvents(t, storetest.Events(t, s, key), "acme", [2]string{"quota.refused", "tok9"})[0]
		if d["quota"] != "quotes" || d["count"] != float64(6) || d["limit"] != float64(10) {
			t.Fatalf("data %v", d)
		}
	})
}
