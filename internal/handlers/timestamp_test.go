package handlers

import (
	"encoding/json"
	"testing"
	"time"
)

// A Timestamp answers UTC with exactly three fractional digits, whatever the instant's precision
// or zone, and reads any RFC 3339 date-time back.
func TestTimestampHasExactlyMilliseconds(t *testing.T) {
	t.Parallel()
	plus2 := time.FixedZone("+02", 2*3600)
	for _, tt := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 11, 26, 15, 4, 5, 70_000_000, time.UTC), `"2026-11-26T15:04:05.070Z"`},
		{time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC), `"2026-11-26T15:04:05.000Z"`},
		{time.Date(2026, 11, 26, 15, 4, 5, 384_999_999, time.UTC), `"2026-11-26T15:04:05.384Z"`},
		{time.Date(2026, 11, 26, 17, 4, 5, 500_000_000, plus2), `"2026-11-26T15:04:05.500Z"`},
	} {
		got, err := json.Marshal(ts(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("%v: %s %v, want %s", tt.in, got, err, tt.want)
		}
		var back Timestamp
		if err := json.Unmarshal(got, &back); err != nil || !back.Equal(tt.in.Truncate(time.Millisecond)) {
			t.Errorf("%s read back as %v (%v)", got, back, err)
		}
	}
	var in Timestamp
	if err := json.Unmarshal([]byte(`"2026-11-26T17:04:05.123456+02:00"`), &in); err != nil || in.UnixMicro()%1e6 != 123456 {
		t.Errorf("a request's RFC 3339 date-time: %v %v", in, err)
	}
	if _, err := json.Marshal(ts(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); err == nil {
		t.Error("a year past 9999 was written")
	}
}
