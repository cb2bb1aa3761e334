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

// TestExpiryJudgeEnd: the hot path knows the key's end (its PTTL) and the idle timeout, and
// the absolute deadline only once a refresh script has answered it.
func TestExpiryJudgeEnd(t *testing.T) {
	t.Parallel()
	const min = 60_000
	e := Expiry{RefreshFraction: 0.25}
	tests := []struct {
		name                     string
		now, end, idle, absolute int64
		v                        Verdict
	}{
		{"more than a quarter left", 8 * min, 30 * min, 30 * min, 0, Live},
		{"less than a quarter left, deadline unknown", 23 * min, 30 * min, 30 * min, 0, RefreshDue},
		{"less than a quarter left, deadline far", 23 * min, 30 * min, 30 * min, 1000 * min, RefreshDue},
		{"less than a quarter left, the end is the deadline", 23 * min, 30 * min, 30 * min, 30 * min, Live},
		{"over", 30 * min, 30 * min, 30 * min, 0, Expired},
		{"no end known", 1, 0, 30 * min, 0, Expired},
	}
	for _, tt := range tests {
		if v := e.JudgeEnd(tt.now, tt.end, tt.idle, tt.absolute); v != tt.v {
			t.Errorf("%s: JudgeEnd = %d; want %d", tt.name, v, tt.v)
		}
		if tt.absolute > 0 { // Judge agrees when the end comes from the last-seen time
			if _, v := e.Judge(tt.now, tt.end-tt.idle, tt.idle, tt.absolute); v != tt.v {
				t.Errorf("%s: Judge = %d; want %d", tt.name, v, tt.v)
			}
		}
	}
}
