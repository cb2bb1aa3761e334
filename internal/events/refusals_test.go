package events

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// fakeRefusalStore is a RefusalStore in memory: one total per window, the event written at
// the first call at or after its due time (as refusal_window.lua), calls counted.
type fakeRefusalStore struct {
	mu      sync.Mutex
	now     func() time.Time
	calls   int
	fail    bool
	totals  map[string]int64
	written map[string]int64 // subject@window start → count in its event
}

func (f *fakeRefusalStore) Add(_ context.Context, w RefusalWindow, n int64) (RefusalOutcome, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	now := f.now().UnixMilli()
	if f.fail {
		return 0, 0, errors.New("redis down")
	}
	k := w.Subject + "@" + strconv.FormatInt(w.StartMs, 10)
	if _, ok := f.written[k]; ok {
		return RefusalAlready, now, nil
	}
	f.totals[k] += n
	if now < w.DueMs {
		return RefusalPending, now, nil
	}
	f.written[k] = f.totals[k]
	return RefusalWritten, now, nil
}

func dropped(t *testing.T, rd *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "hashgate_events_refusals_dropped" {
				for _, p := range s.DataPoints {
					v, _ := p.Attributes.Value("reason")
					out[v.AsString()] += p.Value
				}
			}
		}
	}
	return out
}

// TestRefusalsRecordIsMemoryOnlyAndBounded: recording refusals calls no store (no Redis round
// trip on a refused request's path); past MaxPending windows a refusal of a new one is dropped
// and counted (full); counts a failing store did not take are kept and sent once it answers;
// the window's event is written once, after its due time, with every count; a count of the
// window after its event is counted as late.
func TestRefusalsRecordIsMemoryOnlyAndBounded(t *testing.T) {
	now := time.UnixMilli(1_000_000_020_000) // a minute's start
	clock := func() time.Time { return now }
	st := &fakeRefusalStore{now: clock, totals: map[string]int64{}, written: map[string]int64{}}
	rd := sdkmetric.NewManualReader()
	r, err := NewRefusals(st, RefusalOptions{Window: time.Minute, Grace: 3 * time.Second, MaxPending: 3,
		Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd)).Meter("test")})
	if err != nil {
		t.Fatal(err)
	}
	r.now = clock
	ctx := context.Background()
	for i := range 100 {
		r.Record(ctx, Refusal{Type: RateLimitRefused, Tenant: "acme", Subject: "tok" + strconv.Itoa(i%5), Name: "token", Limit: 5})
	}
	if st.calls != 0 || r.Pending() != 3 {
		t.Fatalf("after 100 refusals: %d store calls, %d windows pending; want 0 and 3", st.calls, r.Pending())
	}
	if d := dropped(t, rd); d["full"] != 40 {
		t.Fatalf("dropped %v, want 40 full (tok3, tok4)", d)
	}
	if err := r.Flush(ctx, false); err != nil || st.calls != 0 {
		t.Fatalf("a flush inside the window: %d calls, %v", st.calls, err)
	}
	now = now.Add(time.Minute) // the window ended
	st.fail = true
	if err := r.Flush(ctx, false); err == nil || st.calls != 1 {
		t.Fatalf("a flush on a failing store: %v after %d calls, want an error after the first", err, st.calls)
	}
	st.fail = false
	if err := r.Flush(ctx, false); err != nil || len(st.written) != 0 || r.Pending() != 3 {
		t.Fatalf("before due: %v, %d written, %d pending", err, len(st.written), r.Pending())
	}
	now = now.Add(3 * time.Second)
	if err := r.Flush(ctx, false); err != nil || r.Pending() != 0 {
		t.Fatalf("at due: %v, %d pending", err, r.Pending())
	}
	start := now.Add(-time.Minute - 3*time.Second).UnixMilli()
	at := "@" + strconv.FormatInt(start, 10)
	if len(st.written) != 3 || st.written["tok0"+at] != 20 || st.written["tok1"+at] != 20 || st.written["tok2"+at] != 20 {
		t.Fatalf("events %v, want one of 20 refusals for each of tok0, tok1, tok2 in the window at %d", st.written, start)
	}
	late := RefusalWindow{Refusal: Refusal{Type: RateLimitRefused, Tenant: "acme", Subject: "tok0", Name: "token"}, StartMs: start,
		Length: time.Minute, DueMs: start + 63000}
	r.mu.Lock()
	r.pending[refusalKey{RateLimitRefused, "acme", "tok0", "token", start}] = &refusalAgg{w: late, unsent: 4}
	r.mu.Unlock()
	if err := r.Flush(ctx, false); err != nil {
		t.Fatal(err)
	}
	if d := dropped(t, rd); d["late"] != 4 {
		t.Fatalf("dropped %v, want 4 late", d)
	}
}
