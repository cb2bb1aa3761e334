package main

import "testing"

func TestEvaluateEvents(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	rows := func(quoteOn, quoteOff, sessOn, sessOff float64) []row {
		return []row{{Key: "quote-patch", Res: res(quoteOn)}, {Key: "quote-patch-noevents", Res: res(quoteOff)},
			{Key: "session-create", Res: res(sessOn)}, {Key: "session-create-noevents", Res: res(sessOff)}}
	}
	for _, tt := range []struct {
		name         string
		rows         []row
		pass, missed bool
	}{
		{"every row within 10%", rows(9500, 10000, 4600, 5000), true, false},
		{"one row costs 12%", rows(9500, 10000, 4400, 5000), false, false},
		{"a row without its twin is left out", rows(9500, 10000, 4400, 5000)[:3], true, false},
		{"no twin at all", rows(9500, 10000, 4400, 5000)[:1], false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp := report{Rows: tt.rows}
			rp.evaluateEvents()
			if len(rp.Targets) != 1 || rp.Targets[0].Name != eventsCostTarget {
				t.Fatalf("targets %+v", rp.Targets)
			}
			if g := rp.Targets[0]; g.Pass != tt.pass || g.Missed != tt.missed {
				t.Fatalf("pass %v missed %v, want %v %v: %s", g.Pass, g.Missed, tt.pass, tt.missed, g.Detail)
			}
		})
	}
}
