package session

import "testing"

func TestExpiryJudge(t *testing.T) {
	t.Parallel()
	const min = 60_000
	e := Expiry{RefreshFraction: 0.25}
	tests := []struct {
		name                          string
		now, lastSeen, idle, absolute int64
		end                           int64
		v                             Verdict
	}{
		{"fresh", 1 * min, 0, 30 * min, 1000 * min, 30 * min, Live},
		{"more than a quarter left", 22 * min, 0, 30 * min, 1000 * min, 30 * min, Live},
		{"less than a quarter left", 23 * min, 0, 30 * min, 1000 * min, 30 * min, RefreshDue},
		{"idle window over", 30 * min, 0, 30 * min, 1000 * min, 30 * min, Expired},
		{"absolute deadline first", 10 * min, 0, 30 * min, 20 * min, 20 * min, Live},
		{"near the absolute deadline: sliding would not move it", 19 * min, 0, 30 * min, 20 * min, 20 * min, Live},
		{"past the absolute deadline", 20 * min, 0, 30 * min, 20 * min, 20 * min, Expired},
		{"no absolute deadline read", 1, 0, 30 * min, 0, 0, Expired},
	}
	for _, tt := range tests {
		end, v := e.Judge(tt.now, tt.lastSeen, tt.idle, tt.absolute)
		if end != tt.end || v != tt.v {
			t.Errorf("%s: Judge = %d, %d; want %d, %d", tt.name, end, v, tt.end, tt.v)
		}
	}
}
