package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/accessrules"
)

func TestParseWrkOutput(t *testing.T) {
	t.Parallel()
	const line = `HGBENCH {"requests":120000,"duration_us":10000000,"bytes":9000000,"connect_errors":0,"read_errors":1,"write_errors":0,"status_errors":3,"timeouts":2,"p50_us":1500.0,"p99_us":9000.5,"p999_us":20000.0,"mean_us":1800.2,"max_us":45000.0,"statuses":{"200":119997,"412":3}}`
	tests := []struct {
		name    string
		out     string
		wantErr bool
		check   func(t *testing.T, r wrkResult)
	}{
		{
			name: "result among wrk's own lines",
			out:  "Running 10s test @ http://127.0.0.1:1/\n  2 threads and 64 connections\n" + line + "\nRequests/sec: 12000\n",
			check: func(t *testing.T, r wrkResult) {
				if r.Requests != 120000 || r.RPS() != 12000 {
					t.Errorf("requests %d, rps %v; want 120000, 12000", r.Requests, r.RPS())
				}
				if r.P50 != 1500 || r.P99 != 9000.5 || r.P999 != 20000 {
					t.Errorf("percentiles %v %v %v", r.P50, r.P99, r.P999)
				}
				if r.Statuses[200] != 119997 || r.Statuses[412] != 3 || len(r.Statuses) != 2 {
					t.Errorf("statuses %v", r.Statuses)
				}
				if r.SocketErrors() != 3 || r.StatusErrors != 3 {
					t.Errorf("socket errors %d, status errors %d; want 3, 3", r.SocketErrors(), r.StatusErrors)
				}
			},
		},
		{
			name: "no statuses tallied",
			out:  strings.Replace(line, `{"200":119997,"412":3}`, `{}`, 1),
			check: func(t *testing.T, r wrkResult) {
				if len(r.Statuses) != 0 {
					t.Errorf("statuses %v, want none", r.Statuses)
				}
			},
		},
		{name: "no result line", out: "Running 10s test\nRequests/sec: 1\n", wantErr: true},
		{name: "truncated json", out: line[:60], wantErr: true},
		{name: "bad status key", out: strings.Replace(line, `"412":3`, `"x":3`, 1), wantErr: true},
		{name: "zero duration", out: strings.Replace(line, `"duration_us":10000000`, `"duration_us":0`, 1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := parseWrkOutput([]byte(tt.out))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
	if _, err := parseWrkOutput(nil); !errors.Is(err, errNoResult) {
		t.Errorf("empty output: err = %v, want errNoResult", err)
	}
}

func TestCommandStatsDelta(t *testing.T) {
	t.Parallel()
	before, err := parseCommandStats("# Commandstats\r\n" +
		"cmdstat_hmget:calls=10,usec=30,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=4,usec=120,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|caching:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseCommandStats("# Commandstats\n" +
		"cmdstat_hmget:calls=1010,usec=3030,usec_per_call=3.00,rejected_calls=0,failed_calls=0\n" +
		"cmdstat_evalsha:calls=1000,usec=9000,usec_per_call=9.00,rejected_calls=0,failed_calls=0\n" +
		"cmdstat_info:calls=6,usec=180,usec_per_call=30.00,rejected_calls=0,failed_calls=0\n" +
		"cmdstat_client|caching:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\n")
	if err != nil {
		t.Fatal(err)
	}
	d := after.delta(before)
	want := commandStats{"hmget": 1000, "evalsha": 1000}
	if len(d) != len(want) || d["hmget"] != 1000 || d["evalsha"] != 1000 {
		t.Fatalf("delta = %v, want %v (info ignored, unchanged dropped)", d, want)
	}
	if d.total() != 2000 {
		t.Errorf("total = %d, want 2000", d.total())
	}
	if got := d.breakdown(1000, 8); got != "evalsha 1.00, hmget 1.00" {
		t.Errorf("breakdown = %q", got)
	}
	// A reset in between counts from zero.
	reset := commandStats{"hmget": 5}.delta(commandStats{"hmget": 1010})
	if reset["hmget"] != 5 {
		t.Errorf("after a reset: %v, want hmget 5", reset)
	}
	for _, bad := range []string{"cmdstat_get:usec=3", "cmdstat_get:calls=x,usec=1", "cmdstat_:calls=1"} {
		if _, err := parseCommandStats(bad); err == nil {
			t.Errorf("parseCommandStats(%q): no error", bad)
		}
	}
}

func TestParseClientCalls(t *testing.T) {
	t.Parallel()
	text := `# HELP rueidis_command_duration_seconds
# TYPE rueidis_command_duration_seconds histogram
rueidis_command_duration_seconds_bucket{operation="EVALSHA",le="+Inf"} 1500
rueidis_command_duration_seconds_sum{operation="EVALSHA"} 0.5
rueidis_command_duration_seconds_count{operation="EVALSHA",otel_scope_name="github.com/redis/rueidis"} 1500
rueidis_command_duration_seconds_count{operation="HMGET PTTL",otel_scope_name="x"} 500
rueidis_command_duration_seconds_count{odd="a \"}\" b",operation="HMGET"} 2000 1712345678
rueidis_do_cache_hits_total{otel_scope_name="github.com/redis/rueidis"} 1990
rueidis_do_cache_miss_total 10
`
	c, ok := parseClientCalls(text)
	if !ok {
		t.Fatal("no calls found")
	}
	if c.Calls["EVALSHA"] != 1500 || c.Calls["HMGET PTTL"] != 500 || c.Calls["HMGET"] != 2000 || c.Hits != 1990 {
		t.Fatalf("calls %v hits %v", c.Calls, c.Hits)
	}
	if rt := c.RoundTrips(); rt != 2010 {
		t.Errorf("round trips = %v, want 4000 − 1990 = 2010", rt)
	}
	d := c.sub(clientCalls{Calls: map[string]float64{"EVALSHA": 500, "HMGET": 2000}, Hits: 1990})
	if d.RoundTrips() != 1500 || len(d.Calls) != 2 {
		t.Errorf("delta %v → %v round trips, want EVALSHA 1000 + HMGET PTTL 500", d.Calls, d.RoundTrips())
	}
	if got := d.breakdown(1000); got != "EVALSHA 1.00, HMGET PTTL 0.50" {
		t.Errorf("breakdown = %q", got)
	}
	naive, ok := parseClientCalls(metricNaiveRT + " 42\n")
	if !ok || naive.RoundTrips() != 42 {
		t.Errorf("naive counter: %v %v", naive, ok)
	}
	if _, ok := parseClientCalls("go_goroutines 12\n"); ok {
		t.Error("no rueidis metric: ok = true")
	}
}

func TestKeyPattern(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"hg:v1:sess:{HqmZlnfwLA7o}:v5j5-VhIs4FOwPkjw6":           "hg:v1:sess:{…}:*",
		"hg:v1:quote:{q_01jd8x}:items":                           "hg:v1:quote:{…}:items",
		"hg:v1:token:{01jd8x0000000000000000000a}":               "hg:v1:token:{…}",
		"hg:v1:rl:{abc}:mfa":                                     "hg:v1:rl:{…}:mfa",
		"hg:v1:idem:{t}:quote_create:" + strings.Repeat("a", 64): "hg:v1:idem:{…}:quote_create:*",
		"naive:session:abc":                                      "naive:session:abc",
	}
	for key, want := range tests {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			if got := keyPattern(key); got != want {
				t.Errorf("keyPattern = %q, want %q", got, want)
			}
		})
	}
}

func TestRenderScript(t *testing.T) {
	t.Parallel()
	src, err := renderScript(wrkScript{
		Headers: map[string]string{"Authorization": "Bearer x"},
		Items:   []wrkItem{{Path: "/v1/x", Body: `{"a":"b\c"}`, Header: "Cookie", Value: "k=v\n"}},
		Tally:   true,
	}, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		`NTHREADS = 2`, `METHOD = "GET"`, `REPEAT = 1`, `["Authorization"] = "Bearer x"`,
		`{ "/v1/x", "{\"a\":\"b\\c\"}", "Cookie", "k=v\010" }`, `TALLY = true`, `QUOTE_PATCH = false`, resultMarker,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if _, err := renderScript(wrkScript{}, 2); err == nil {
		t.Error("no items: no error")
	}
}

func TestSessionKeys(t *testing.T) {
	t.Parallel()
	id := "s_HqmZlnfwLA7o_v5j5-VhIs4FOwPkjw6"
	if got := sessionKey(id); got != "hg:v1:sess:{HqmZlnfwLA7o}:v5j5-VhIs4FOwPkjw6" {
		t.Errorf("sessionKey = %q", got)
	}
	if got := userKey(id, mfaCounterKey); got != "hg:v1:rl:{HqmZlnfwLA7o}:mfa" {
		t.Errorf("userKey = %q", got)
	}
	// Tags and parts are base64url: '_' inside them is not a separator.
	if got := sessionKey("s_a_cd-fgh_jkl_v5j5_VhIs4FOwPkjw6"); got != "hg:v1:sess:{a_cd-fgh_jkl}:v5j5_VhIs4FOwPkjw6" {
		t.Errorf("sessionKey with '_' in the tag = %q", got)
	}
	for _, bad := range []string{"", "x_HqmZlnfwLA7o_v5j5-VhIs4FOwPkjw6JB4w", "s_HqmZlnfwLA7o-v5j5-VhIs4FOwPkjw6JB4w", "s_a_b", id + "x"} {
		if sessionKey(bad) != "" {
			t.Errorf("sessionKey(%q) = %q, want empty", bad, sessionKey(bad))
		}
	}
	// Object patterns are the documented key names with the tenant tag left open.
	for got, want := range map[string]string{quoteKeyPattern("q_1"): "hg:v1:quote:{*}:q_1",
		caseKeyPattern("c_1"): "hg:v1:case:{*}:c_1", tokenKeyPattern("t1"): "hg:v1:token:{*}:t1"} {
		if got != want {
			t.Errorf("key pattern %q, want %q", got, want)
		}
	}
	if jwtID("a.eyJqdGkiOiIwMWpkIn0.c") != "01jd" || jwtID("nope") != "" {
		t.Error("jwtID")
	}
}

func TestEvaluateTargets(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	rows := func(authz, rt float64) []row {
		return []row{
			{Key: "ceiling-http", Res: res(40000)},
			{Key: "naive", Res: res(16000)},
			{Key: "authz-session", Gateway: true, Res: res(authz), RT: rt},
			{Key: "whoami", Gateway: true, Res: res(authz), RT: 1},
			{Key: "authz-rules", Gateway: true, Res: res(32000), RT: 1},
			{Key: "authz-norules", Gateway: true, Res: res(32500), RT: 1},
			{Key: "quote-get", Gateway: true, Res: res(10000), RT: 1},
			{Key: "quote-get-nolimit", Gateway: true, Res: res(10200), RT: 1},
		}
	}
	mem := func(b int64) []memRow { return []memRow{{Object: "session hash, plain (BASIC)", Bytes: b, Max: b}} }
	tests := []struct {
		name     string
		rp       report
		wantFail bool
		wantMiss int
		failing  string // when set: the only target that fails starts with it
	}{
		{name: "all met", rp: report{Rows: rows(32000, 1.0), Memory: mem(200)}},
		{name: "below the HTTP ceiling share", rp: report{Rows: rows(29000, 1.0), Memory: mem(200)}, wantFail: true},
		{name: "two round trips", rp: report{Rows: rows(32000, 2.0), Memory: mem(200)}, wantFail: true},
		{name: "session hash too big", rp: report{Rows: rows(32000, 1.0), Memory: mem(488)}, wantFail: true},
		// The per-user layout's one-session hash is read against a session's all-in bound.
		{name: "per-user hash within the bound", rp: report{Rows: rows(32000, 1.0),
			Memory: []memRow{{Object: perUserHashObject + " (BASIC)", Bytes: 328, Max: 328}}}},
		{name: "per-user hash too big", rp: report{Rows: rows(32000, 1.0),
			Memory: []memRow{{Object: perUserHashObject + " (BASIC)", Bytes: 401, Max: 401}}}, wantFail: true, failing: "a one-session user's hash"},
		// Paired rounds decide the ceiling target by their median, whatever the single rows say.
		{name: "paired median met", rp: report{Rows: rows(29000, 1.0), Memory: mem(200),
			Paired: []pairedRound{{40000, 28000}, {36000, 30000}, {38000, 30400}}}},
		{name: "paired median missed", rp: report{Rows: rows(32000, 1.0), Memory: mem(200),
			Paired: []pairedRound{{40000, 34000}, {40000, 28000}, {40000, 29000}}}, wantFail: true},
		{name: "sessions failed", rp: report{Rows: []row{{Key: "ceiling-http", Res: res(40000)}, {Key: "authz-session", Gateway: true, Skip: "failed: set-up"}}},
			wantFail: true, wantMiss: 7},
		{name: "rate limiting too costly", rp: report{Rows: append(rows(32000, 1.0)[:6],
			row{Key: "quote-get", Gateway: true, Res: res(9000), RT: 1}, row{Key: "quote-get-nolimit", Gateway: true, Res: res(10000), RT: 1}),
			Memory: mem(200)}, wantFail: true, failing: "rate limiting"},
		// Paired rounds decide the rate-limit target by their median, whatever the single rows
		// (measured tens of seconds apart) say.
		{name: "rate-limit paired median met, rows 0.90", rp: report{Rows: append(rows(32000, 1.0)[:6],
			row{Key: "quote-get", Gateway: true, Res: res(9000), RT: 1}, row{Key: "quote-get-nolimit", Gateway: true, Res: res(10000), RT: 1}),
			Memory: mem(200), LimitPaired: pairedRounds{{10000, 9700}, {10000, 9000}, {9800, 9800}}}},
		{name: "rate-limit paired median missed, rows 0.98", rp: report{Rows: rows(32000, 1.0), Memory: mem(200),
			LimitPaired: pairedRounds{{10000, 9000}, {10000, 9400}, {10000, 9900}}}, wantFail: true, failing: "rate limiting"},
		{name: "rate-limit paired without rows", rp: report{Rows: rows(32000, 1.0)[:6], Memory: mem(200),
			LimitPaired: pairedRounds{{10000, 9900}}}},
		{name: "rate-limit rows missing, no rounds", rp: report{Rows: rows(32000, 1.0)[:6], Memory: mem(200)},
			wantFail: true, wantMiss: 1, failing: "rate limiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp := tt.rp
			// every case measures the events' pair, within its target (report_events_test.go)
			rp.Rows = append(slices.Clip(rp.Rows), row{Key: "session-create", Gateway: true, Res: res(9500), RT: 1},
				row{Key: "session-create-noevents", Gateway: true, Res: res(10000), RT: 1})
			rp.evaluate(256)
			if len(rp.Targets) != 8 {
				t.Fatalf("%d targets, want 8: %+v", len(rp.Targets), rp.Targets)
			}
			miss := 0
			for _, tg := range rp.Targets {
				if tg.Missed {
					miss++
				}
			}
			if rp.failed() != tt.wantFail || miss != tt.wantMiss {
				t.Errorf("failed %v (want %v), not measured %d (want %d): %+v", rp.failed(), tt.wantFail, miss, tt.wantMiss, rp.Targets)
			}
			if tt.failing != "" {
				for _, tg := range rp.Targets {
					if !tg.Pass != strings.HasPrefix(tg.Name, tt.failing) {
						t.Errorf("target %q: pass %v (only %q… should fail): %s", tg.Name, tg.Pass, tt.failing, tg.Detail)
					}
				}
			}
		})
	}
}

func TestPairedMedian(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p    pairedRounds
		want float64
	}{
		{nil, 0},
		{pairedRounds{{100, 80}}, 0.8},
		{pairedRounds{{100, 90}, {100, 70}, {100, 60}}, 0.7},
		{pairedRounds{{100, 90}, {100, 70}, {100, 60}, {100, 80}}, 0.75},
		{pairedRounds{{0, 90}, {100, 70}}, 0.7},
		// The rate-limit pair: quote-get-nolimit is the ref, quote-get the subject. One round
		// with a stall on either side (the 0.67 × of session 4) does not move the median.
		{pairedRounds{{7727, 5147}, {5000, 4950}, {5100, 5070}}, 0.99},
		{pairedRounds{{4000, 3960}, {4000, 6000}, {4000, 3920}}, 0.99},
	} {
		if got := tt.p.median(); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("median(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

// TestRunPaired checks the pairing: the ref first in even rounds, the subject first in odd
// ones, each rate recorded on its own side, and a failed run ending the rounds.
func TestRunPaired(t *testing.T) {
	t.Parallel()
	var order []string
	measure := func(round int, subject bool) (float64, error) {
		if subject {
			order = append(order, fmt.Sprintf("S%d", round))
			return float64(50 + round), nil
		}
		order = append(order, fmt.Sprintf("R%d", round))
		return float64(100 + round), nil
	}
	ps, err := runPaired(context.Background(), 4, measure)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "R0 S0 S1 R1 R2 S2 S3 R3" {
		t.Errorf("order %s, want R0 S0 S1 R1 R2 S2 S3 R3 (ABBA)", got)
	}
	if want := (pairedRounds{{100, 50}, {101, 51}, {102, 52}, {103, 53}}); !slices.Equal(ps, want) {
		t.Errorf("rounds %v, want %v", ps, want)
	}

	boom := errors.New("wrk died")
	ps, err = runPaired(context.Background(), 3, func(round int, subject bool) (float64, error) {
		if round == 1 && !subject {
			return 0, boom
		}
		return measure(round, subject)
	})
	if !errors.Is(err, boom) || !slices.Equal(ps, pairedRounds{{100, 50}}) {
		t.Errorf("a failed run in round 2: rounds %v, err %v; want the first round and the error", ps, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ps, err := runPaired(ctx, 3, measure); len(ps) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: rounds %v, err %v", ps, err)
	}
}

func TestOkShare(t *testing.T) {
	t.Parallel()
	tallied := row{Expect: []int{422, 429}, Res: wrkResult{Requests: 100, Statuses: map[int]int64{429: 95, 422: 4, 500: 1}}}
	if share, other := tallied.okShare(); math.Abs(share-0.99) > 1e-9 || other != "500×1" {
		t.Errorf("tallied: %v %q", share, other)
	}
	untallied := row{Expect: []int{200}, Res: wrkResult{Requests: 200, StatusErrors: 50}}
	if share, other := untallied.okShare(); share != 0.75 || other != "non-2xx×50" {
		t.Errorf("untallied: %v %q", share, other)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	lat := make([]int64, 1000)
	for i := range lat {
		lat[i] = int64(i+1) * 1000 // 1µs … 1000µs
	}
	for q, want := range map[float64]float64{50: 500, 99: 990, 99.9: 999, 100: 1000} {
		if got := pct(lat, q); got != want {
			t.Errorf("pct(%v) = %v, want %v", q, got, want)
		}
	}
	if pct(nil, 50) != 0 {
		t.Error("empty: not 0")
	}
}

func TestEvaluateRulesTargets(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	rows := func(rules, noRules float64) []row {
		return []row{{Key: "ceiling-http", Res: res(40000)},
			{Key: "authz-rules", Gateway: true, Res: res(rules), RT: 1}, {Key: "authz-norules", Gateway: true, Res: res(noRules), RT: 1}}
	}
	tests := []struct {
		name                 string
		rp                   report
		costPass, ceilPass   bool
		costMiss, ceilMissed bool
	}{
		{name: "rows: both met", rp: report{Rows: rows(31000, 32000)}, costPass: true, ceilPass: true},
		{name: "rows: rules cost 10%", rp: report{Rows: rows(28800, 32000)}, ceilPass: false},
		{name: "rows: cheap but under the ceiling share", rp: report{Rows: rows(29000, 29500)}, costPass: true},
		// The paired median decides the cost, whatever the single rows say.
		{name: "paired cost met, rows 0.90", rp: report{Rows: rows(28800, 32000),
			RulesPaired: pairedRounds{{30000, 29000}, {30000, 29500}, {30000, 26000}}}, costPass: true},
		{name: "paired cost missed, rows 0.99", rp: report{Rows: rows(31700, 32000),
			RulesPaired: pairedRounds{{30000, 27000}, {30000, 28000}, {30000, 29900}}}, ceilPass: true},
		// Both pairs: the ceiling share chains their medians (0.80 × 0.96 = 0.77), not the rows (0.70).
		{name: "chained medians met", rp: report{Rows: rows(28000, 29000),
			Paired:      pairedRounds{{40000, 32000}, {40000, 32000}, {40000, 32000}},
			RulesPaired: pairedRounds{{30000, 28800}, {30000, 28800}, {30000, 28800}}}, costPass: true, ceilPass: true},
		{name: "chained medians missed", rp: report{Rows: rows(31000, 31000),
			Paired:      pairedRounds{{40000, 30000}, {40000, 30000}, {40000, 30000}},
			RulesPaired: pairedRounds{{30000, 29400}, {30000, 29400}, {30000, 29400}}}, costPass: true},
		{name: "not measured", rp: report{Rows: rows(31000, 32000)[:1]}, costMiss: true, ceilMissed: true},
		{name: "no rules-off row, no rounds", rp: report{Rows: rows(31000, 32000)[:2]}, costMiss: true, ceilPass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp := tt.rp
			rp.evaluateRules()
			if len(rp.Targets) != 2 {
				t.Fatalf("%d targets, want 2: %+v", len(rp.Targets), rp.Targets)
			}
			cost, ceil := rp.Targets[0], rp.Targets[1]
			if cost.Name != rulesCostTarget || ceil.Name != rulesCeilingTarget {
				t.Fatalf("targets %q, %q", cost.Name, ceil.Name)
			}
			if cost.Pass != tt.costPass || cost.Missed != tt.costMiss {
				t.Errorf("cost: pass %v missed %v, want %v %v: %s", cost.Pass, cost.Missed, tt.costPass, tt.costMiss, cost.Detail)
			}
			if ceil.Pass != tt.ceilPass || ceil.Missed != tt.ceilMissed {
				t.Errorf("ceiling: pass %v missed %v, want %v %v: %s", ceil.Pass, ceil.Missed, tt.ceilPass, tt.ceilMissed, ceil.Detail)
			}
		})
	}
}

// TestRulesFile: the generated file parses into rulesCount rules of every shape, and the
// benchmark's forwarded request is decided by the second-to-last rule (every other one walked
// and missed), which a BASIC session meets.
func TestRulesFile(t *testing.T) {
	t.Parallel()
	set, err := accessrules.Parse(rulesFile(rulesCount))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rules) != rulesCount {
		t.Fatalf("%d rules, want %d", len(set.Rules), rulesCount)
	}
	policies := map[accessrules.Policy]int{}
	for _, r := range set.Rules {
		policies[r.Policy]++
	}
	if policies[accessrules.Allow] == 0 || policies[accessrules.Deny] == 0 || policies[accessrules.Require] == 0 {
		t.Errorf("policies %v: want allow, deny and require rules", policies)
	}
	got := set.Decide(accessrules.Request{Method: rulesMethod, Host: rulesHost, URI: rulesURI})
	if got.Index != rulesCount-2 || got.Name != "app" {
		t.Fatalf("decided by %s, want rule %d (app)", got.Label(), rulesCount-2)
	}
	if !got.Require.Met(accessrules.Subject{Kind: accessrules.KindSession, Level: "BASIC"}) {
		t.Errorf("%s refuses a BASIC session: %s", got.Label(), got.Require.Missing(accessrules.Subject{Kind: accessrules.KindSession, Level: "BASIC"}))
	}
	// A variant of each earlier rule's own request is decided by that rule (the shapes match
	// something: none is dead weight that the walk skips cheaply).
	for i, req := range []accessrules.Request{
		{Method: "GET", Host: "svc0.example.com", URI: "/api/v1/svc0/x"},
		{Method: "GET", Host: "any", URI: "/admin/svc1"},
		{Method: "POST", Host: "eu.tenant2.example.com", URI: "/orders/1"},
		{Method: "GET", Host: "any", URI: "/public/svc3/app.js"},
		{Method: "GET", Host: "any", URI: "/internal/svc4/metrics"},
	} {
		if r := set.Decide(req); r.Index != i {
			t.Errorf("%v decided by %s, want rule %d", req, r.Label(), i)
		}
	}
}

// The HTTP ceiling answers what the gateway answers a session's forward auth: every header the
// gateway sends (X-Auth-Kind and X-Auth-Assertion included, the assertion a three-segment JWT
// of a real one's size) and the body's members, so the ratio compares the gateway's work, not
// the size of the two answers.
func TestCeilingAnswersAsTheGateway(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest("GET", "/v1/authorize", nil), rec)
	if err := ceilingAuthorize()(c); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range rec.Header() {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"Cache-Control", "Content-Type", "X-Auth-Assertion", "X-Auth-Kind", "X-Auth-Level", "X-Auth-Session",
		"X-Auth-Subject", "X-Auth-Tenant", "X-Request-Id"}
	if !slices.Equal(names, want) {
		t.Fatalf("headers %v, want %v", names, want)
	}
	a := rec.Header().Get("X-Auth-Assertion")
	if segs := strings.Split(a, "."); len(segs) != 3 || len(a) < 480 || len(a) > 540 {
		t.Fatalf("assertion %d bytes, %d segments", len(a), len(segs))
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"authLevel", "kind", "sessionId", "subject", "tenantId"} {
		if _, ok := body[k]; !ok {
			t.Errorf("body without %q: %s", k, rec.Body)
		}
	}
}
