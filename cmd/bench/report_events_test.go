package main

import (
	"context"
	"strings"
	"testing"
)

func TestEvaluateEvents(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	rows := func(quoteOn, quoteOff, sessOn, sessOff float64) []row {
		return []row{{Key: "quote-patch", Res: res(quoteOn)}, {Key: "quote-patch-noevents", Res: res(quoteOff)},
			{Key: "session-create", Res: res(sessOn)}, {Key: "session-create-noevents", Res: res(sessOff)}}
	}
	// rounds are five paired rounds of an events-off reference at 10,000 req/s.
	rounds := func(on ...float64) pairedRounds {
		var ps pairedRounds
		for _, x := range on {
			ps = append(ps, pairedRound{Ref: 10000, Subject: x})
		}
		return ps
	}
	for _, tt := range []struct {
		name         string
		rows         []row
		paired       map[string]pairedRounds
		pass, missed bool
		detail       []string // in the target's detail
	}{
		{"every row within 10%", rows(9500, 10000, 4600, 5000), nil, true, false,
			[]string{"quote-patch 9500 vs 10000 req/s (0.95 ×) (single rows)", "session-create 4600 vs 5000 req/s (0.92 ×) (single rows)"}},
		{"one row costs 12%", rows(9500, 10000, 4400, 5000), nil, false, false, []string{"session-create 4400 vs 5000 req/s (0.88 ×)"}},
		{"a row without its twin is left out", rows(9500, 10000, 4400, 5000)[:3], nil, true, false, nil},
		{"no twin at all", rows(9500, 10000, 4400, 5000)[:1], nil, false, true, nil},
		// The single rows run minutes apart: where paired rounds ran, their median decides.
		{"paired rounds within 10% where the single rows are not", rows(8600, 9800, 4600, 5000),
			map[string]pairedRounds{"quote-patch": rounds(9700, 8800, 9400, 9500, 9100)}, true, false,
			[]string{"quote-patch 0.94 × (median of 5 paired rounds; single rows 8600 vs 9800 req/s (0.88 ×))", "session-create 4600 vs 5000 req/s (0.92 ×) (single rows)"}},
		{"paired rounds over 10% where the single rows are within", rows(9900, 9800, 4600, 5000),
			map[string]pairedRounds{"quote-patch": rounds(8700, 8800, 9400, 8900, 9100)}, false, false,
			[]string{"quote-patch 0.89 × (median of 5 paired rounds; single rows 9900 vs 9800 req/s (1.01 ×))"}},
		{"paired rounds without the single rows", nil,
			map[string]pairedRounds{"case-escalate": rounds(9500, 9600, 9400)}, true, false,
			[]string{"case-escalate 0.95 × (median of 3 paired rounds)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp := report{Rows: tt.rows, EventsPaired: tt.paired}
			rp.evaluateEvents()
			if len(rp.Targets) != 1 || rp.Targets[0].Name != eventsCostTarget {
				t.Fatalf("targets %+v", rp.Targets)
			}
			g := rp.Targets[0]
			if g.Pass != tt.pass || g.Missed != tt.missed {
				t.Fatalf("pass %v missed %v, want %v %v: %s", g.Pass, g.Missed, tt.pass, tt.missed, g.Detail)
			}
			for _, d := range tt.detail {
				if !strings.Contains(g.Detail, d) {
					t.Errorf("detail %q lacks %q", g.Detail, d)
				}
			}
		})
	}
}

// TestEventsSides: the write rows whose requests use up what they act on get a fresh script
// for every paired run on both sides, sized for the faster of the two rows; the others run
// their row's script again. Both sides hold a run to the row's expected statuses.
func TestEventsSides(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	b := &bench{rows: []row{{Key: "case-escalate", Res: res(8600)}, {Key: "quote-get", Res: res(30000)},
		{Key: "case-escalate-noevents", Res: res(9800)}}}
	var rates []float64
	var bases []string
	p := plan{Key: "case-escalate", Expect: []int{200}, again: func(_ context.Context, base string, rate float64) (wrkScript, error) {
		rates, bases = append(rates, rate), append(bases, base)
		return wrkScript{Method: "POST"}, nil
	}}
	off, on := b.eventsSides(p, "http://off", wrkScript{}, "http://on", wrkScript{})
	if off.key != "case-escalate-noevents" || on.key != "case-escalate" || off.base != "http://off" || on.base != "http://on" {
		t.Fatalf("sides %+v / %+v", off, on)
	}
	for _, s := range []pairedSide{off, on} {
		if s.again == nil || len(s.expect) != 1 || s.expect[0] != 200 {
			t.Fatalf("side %s: again %v, expect %v", s.name, s.again != nil, s.expect)
		}
		if _, err := s.again(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(rates) != 2 || rates[0] != 9800 || rates[1] != 9800 {
		t.Errorf("fresh scripts sized for %v req/s, want the faster row's 9800 on both sides", rates)
	}
	if len(bases) != 2 || bases[0] != "http://off" || bases[1] != "http://on" {
		t.Errorf("fresh scripts set up through %v, want each side's own gateway", bases)
	}
	p.again = nil
	if off, on := b.eventsSides(p, "", wrkScript{}, "", wrkScript{}); off.again != nil || on.again != nil {
		t.Error("a row without again: the sides make fresh scripts")
	}
}

// TestExpectedShare: a paired run whose answers fall short of the row's statuses (a case
// escalated past its maximum answers 409) ends the rounds.
func TestExpectedShare(t *testing.T) {
	t.Parallel()
	s := pairedSide{name: "case-escalate", expect: []int{200}}
	if err := expectedShare(s, wrkResult{Requests: 1000, Statuses: map[int]int64{200: 995, 409: 5}}); err != nil {
		t.Errorf("99.5%% expected: %v", err)
	}
	err := expectedShare(s, wrkResult{Requests: 1000, Statuses: map[int]int64{200: 900, 409: 100}})
	if err == nil || !strings.Contains(err.Error(), "90.0% expected") || !strings.Contains(err.Error(), "409") {
		t.Errorf("90%% expected: %v", err)
	}
}
