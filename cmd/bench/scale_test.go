package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestZipfSample(t *testing.T) {
	t.Parallel()
	const N, draws = 1_000_000, 200_000
	distinct, seq := zipfSample(N, draws, scaleZipfS, 7)
	if len(seq) != draws || len(distinct) == 0 || len(distinct) >= draws {
		t.Fatalf("%d draws, %d distinct", len(seq), len(distinct))
	}
	counts := make([]int, len(distinct))
	for _, p := range seq {
		if p < 0 || int(p) >= len(distinct) {
			t.Fatalf("position %d outside %d", p, len(distinct))
		}
		counts[p]++
	}
	seen := map[int]bool{}
	for _, d := range distinct {
		if d < 0 || d >= N || seen[d] {
			t.Fatalf("session index %d out of range or repeated", d)
		}
		seen[d] = true
	}
	// Zipf(1.1) over 1M: the top session draws 1/H(1M, 1.1) ≈ 12% of the requests.
	top := slices.Max(counts)
	if share := float64(top) / draws; share < 0.08 || share > 0.16 {
		t.Errorf("top session share %.3f, want about 0.12", share)
	}
	// The hot sessions are spread over the population, not the first created.
	if hot := distinct[slices.Index(counts, top)]; hot == 0 {
		t.Errorf("the hottest session is session 0: ranks not permuted")
	}
	d2, s2 := zipfSample(N, draws, scaleZipfS, 7)
	if !slices.Equal(d2, distinct) || !slices.Equal(s2, seq) {
		t.Error("same seed, different sample")
	}
	u := uniformSet(N, scaleUniformSet, 1)
	if len(u) != scaleUniformSet {
		t.Errorf("uniform set of %d, want %d", len(u), scaleUniformSet)
	}
	if u := uniformSet(500, scaleUniformSet, 1); len(u) != 500 {
		t.Errorf("uniform set over 500 sessions has %d", len(u))
	}
}

func TestRenderSampleScript(t *testing.T) {
	t.Parallel()
	s := wrkScript{Method: "GET", Sample: &wrkSample{Path: "/v1/authorize", Header: "Cookie", Prefix: "c=",
		Tokens: []string{"tokA", "tokB", "tokC"}, Seq: []int32{2, 0, 2}, Seed: 5}}
	src, err := renderScript(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SAMPLE = true", "TOKEN_BLOB = [==[\ntokA\ntokB\ntokC\n]==]", "SEQ_BLOB = [==[\n3 1 3 ]==]",
		`SAMPLE_PATH = "/v1/authorize"`, `SAMPLE_PREFIX = "c="`, "SAMPLE_SEED = 5", "ITEMS = {\n}"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if it := s.Sample.first(); it.Value != "c=tokC" || it.Path != "/v1/authorize" || it.Header != "Cookie" {
		t.Errorf("first request %+v", it)
	}
	for _, bad := range []*wrkSample{{Tokens: []string{"a]==]b"}}, {Tokens: []string{"a\nb"}}, {Tokens: nil},
		{Tokens: []string{"a"}, Seq: []int32{1}}} {
		if _, err := renderScript(wrkScript{Sample: bad}, 2); err == nil {
			t.Errorf("sample %+v rendered", bad)
		}
	}
}

// TestSampleScriptUnderWrk runs both sample shapes through wrk itself (skipped without wrk):
// every request carries one of the tokens, and the Zipf shape sends its sequence's tokens.
func TestSampleScriptUnderWrk(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (scripts/bench.sh installs it)")
	}
	var mu sync.Mutex
	var got map[string]int
	tokens := []string{"t0", "t1", "t2", "t3", "t4", "t5"}
	zipf := wrkScript{Method: "GET", Sample: &wrkSample{Path: "/v1/authorize", Header: "Cookie", Prefix: "c=",
		Tokens: tokens[:3], Seq: []int32{0, 0, 1, 0, 2, 0}}}
	uniform := wrkScript{Method: "GET", Sample: &wrkSample{Path: "/v1/authorize", Header: "Cookie", Prefix: "c=", Tokens: tokens[3:]}}
	w := wrkRunner{Bin: bin, Threads: 2, Connections: 2, Timeout: 2 * time.Second, Dir: t.TempDir()}
	for _, tc := range []struct {
		name string
		s    wrkScript
		want []string
	}{{"zipf", zipf, tokens[:3]}, {"uniform", uniform, tokens[3:]}} {
		// A server per shape: a request of the previous run still in flight when wrk exits
		// lands in the previous map (Close waits for it), not in this shape's.
		seen := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.URL.Path+" "+r.Header.Get("Cookie")]++
			mu.Unlock()
		}))
		res, err := w.run(context.Background(), tc.name, tc.s, srv.URL, time.Second)
		srv.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		mu.Lock()
		got = seen
		for k, n := range got {
			tok, ok := strings.CutPrefix(k, "/v1/authorize c=")
			if !ok || !slices.Contains(tc.want, tok) {
				t.Errorf("%s: %d requests %q, want only /v1/authorize with %v", tc.name, n, k, tc.want)
			}
		}
		if len(got) != len(tc.want) || res.Requests == 0 {
			t.Errorf("%s: %d requests, distinct %v; want every one of %v", tc.name, res.Requests, got, tc.want)
		}
		if tc.name == "zipf" && got["/v1/authorize c=t0"] <= got["/v1/authorize c=t1"] {
			t.Errorf("zipf: t0 (4 of 6 draws) sent %d times, t1 (1 of 6) %d", got["/v1/authorize c=t0"], got["/v1/authorize c=t1"])
		}
		mu.Unlock()
	}
}

func TestParseProcStatus(t *testing.T) {
	t.Parallel()
	rss, hwm := parseProcStatus("Name:\tgateway\nVmPeak:\t 1300000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t7\n")
	if rss != 100<<20 || hwm != 200<<20 {
		t.Errorf("rss %d, hwm %d", rss, hwm)
	}
	if rss, hwm := parseProcStatus("garbage"); rss != 0 || hwm != 0 {
		t.Errorf("garbage: %d %d", rss, hwm)
	}
}

func TestParseGatewayGauges(t *testing.T) {
	t.Parallel()
	g := parseGatewayGauges(`# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.
go_memstats_heap_inuse_bytes 5.1e+07
hashgate_session_auth_cache_lookups_total{otel_scope_name="x",result="hit"} 900
hashgate_session_auth_cache_lookups_total{otel_scope_name="x",result="miss"} 100
hashgate_session_auth_cache_hit_ratio{otel_scope_name="x"} 0.9
rueidis_command_duration_seconds_count{operation="EVALSHA"} 40
rueidis_command_duration_seconds_count{operation="HMGET"} 100
rueidis_do_cache_hits_total 60
`)
	if g.Hits != 900 || g.Misses != 100 || g.HeapInuse != 51e6 || !g.CallsOK || g.Calls.RoundTrips() != 80 {
		t.Errorf("%+v (round trips %v)", g, g.Calls.RoundTrips())
	}
}

func TestScenarioSelection(t *testing.T) {
	t.Parallel()
	c, err := parseFlags(nil, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.selected("authz-session") || !c.selected("scale-10k") || !c.selected("scale-100k") || c.selected("scale-1m") {
		t.Errorf("default selection: %v", c.only)
	}
	c, err = parseFlags([]string{"-scenarios", "all,scale-1m"}, &strings.Builder{})
	if err != nil || !c.selected("scale-1m") || !c.selected("naive") {
		t.Errorf("all,scale-1m: %v, %v", err, c.only)
	}
	c, err = parseFlags([]string{"-scenarios", "scale-1m"}, &strings.Builder{})
	if err != nil || !c.selected("scale-1m") || c.selected("scale-10k") {
		t.Errorf("scale-1m: %v, %v", err, c.only)
	}
	if _, err := parseFlags([]string{"-scenarios", "scale-2m"}, &strings.Builder{}); err == nil {
		t.Error("unknown key accepted")
	}
	if _, err := parseFlags([]string{"-scale-create", "pipe"}, &strings.Builder{}); err == nil {
		t.Error("unknown -scale-create accepted")
	}
}

func TestEvaluateScale(t *testing.T) {
	t.Parallel()
	res := func(rps float64) wrkResult { return wrkResult{Requests: int64(rps * 10), DurationUS: 10_000_000} }
	good := func(n int) []scaleRow {
		return []scaleRow{
			{N: n, Shape: "zipf", Res: res(16000), Ceiling: 20000, RT: 0.2, RSSPeak: 200 << 20, MemAfter: 380},
			{N: n, Shape: "uniform", Res: res(11000), Ceiling: 20000, RT: 0.7, RSSPeak: 250 << 20, MemAfter: 390},
		}
	}
	marks := func(rp report) string {
		var b strings.Builder
		for _, tg := range rp.ScaleTargets {
			switch {
			case tg.Missed:
				b.WriteString("M")
			case tg.Pass:
				b.WriteString("P")
			default:
				b.WriteString("F")
			}
		}
		return b.String()
	}
	bad := good(1_000_000)
	bad[1].RSSPeak, bad[0].Res, bad[1].MemAfter, bad[1].RT = 300<<20, res(14000), 480, 1.5
	tests := []struct {
		name string
		rows []scaleRow
		want string // RSS, Zipf ratio, uniform ratio, Redis, round trips
	}{
		{"1M met", good(1_000_000), "PPPPP"},
		{"1M missed", bad, "FFPFF"},
		{"no 1M run", good(100_000), "MPPPP"},
		{"uniform failed", append(good(1_000_000)[:1], scaleRow{N: 1_000_000, Shape: "uniform", Skip: "failed: x"}), "MPMPP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp := report{Scale: tt.rows}
			rp.evaluateScale()
			if got := marks(rp); got != tt.want {
				t.Errorf("targets %s, want %s: %+v", got, tt.want, rp.ScaleTargets)
			}
			if rp.failed() {
				t.Error("scale targets count for -enforce")
			}
		})
	}
}

// A scale row's ceiling brackets its window: the mean of the measurements before and after,
// or the one that worked.
func TestMeanPositive(t *testing.T) {
	for _, tt := range []struct{ a, b, want float64 }{{20000, 30000, 25000}, {20000, 0, 20000}, {0, 30000, 30000}, {0, 0, 0}, {-1, 0, 0}} {
		if got := meanPositive(tt.a, tt.b); got != tt.want {
			t.Errorf("meanPositive(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// The scale rows' CPU columns: utime and stime from /proc/<pid>/stat (the command name may
// hold spaces and parentheses), and CPU time per request.
func TestProcCPU(t *testing.T) {
	line := "4242 (gate way) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 1000 200 18446744073709551615"
	if got := parseProcCPU(line); got != 3.25 {
		t.Errorf("parseProcCPU = %v, want 3.25 (325 ticks)", got)
	}
	for _, bad := range []string{"", "4242 gateway S 1", "4242 (g) S 1 2 3"} {
		if got := parseProcCPU(bad); got != -1 {
			t.Errorf("parseProcCPU(%q) = %v, want -1", bad, got)
		}
	}
	if got := procCPU(os.Getpid()); got < 0 {
		t.Errorf("procCPU(self) = %v", got)
	}
	for _, tt := range []struct {
		before, after float64
		n             int64
		want          float64
	}{{1.0, 1.5, 10000, 50}, {-1, 1.5, 10000, -1}, {1.5, 1.0, 10000, -1}, {1.0, 1.5, 0, -1}} {
		if got := perRequestMicros(tt.before, tt.after, tt.n); got != tt.want {
			t.Errorf("perRequestMicros(%v, %v, %d) = %v, want %v", tt.before, tt.after, tt.n, got, tt.want)
		}
	}
}

// A script with Tally counts every answer by status, whichever request shape it sends.
func TestTallyUnderWrk(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (scripts/bench.sh installs it)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
		}
	}))
	defer srv.Close()
	w := wrkRunner{Bin: bin, Threads: 1, Connections: 1, Timeout: 2 * time.Second, Dir: t.TempDir()}
	for name, s := range map[string]wrkScript{
		"items":  {Method: "GET", Tally: true, Items: []wrkItem{{Path: "/ok"}, {Path: "/gone"}}},
		"sample": {Method: "GET", Tally: true, Sample: &wrkSample{Path: "/gone", Header: "Cookie", Prefix: "c=", Tokens: []string{"a"}}},
	} {
		res, err := w.run(context.Background(), name, s, srv.URL, time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Statuses[410] == 0 || (name == "items" && res.Statuses[200] == 0) {
			t.Errorf("%s: statuses %v, want 410s (and 200s for items)", name, res.Statuses)
		}
	}
	// A quote-patch script tallies too, and keeps following each answer's ETag: a server that
	// answers 412 to any other If-Match than the last ETag it gave sees only current ones.
	var mu sync.Mutex
	version := 1
	patch := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("If-Match") != fmt.Sprintf(`"%d"`, version) {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		version++
		w.Header().Set("ETag", fmt.Sprintf(`"%d"`, version))
		fmt.Fprint(w, `{"quoteId":"q_1"}`)
	}))
	defer patch.Close()
	res, err := w.run(context.Background(), "patch", wrkScript{QuotePatch: true, Tally: true,
		Items: []wrkItem{{Path: "q_1", Value: `"1"`}}}, patch.URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Statuses[200] < 2 || res.Statuses[412] > 0 {
		t.Errorf("quote patch: statuses %v, want only 200s (each If-Match the last ETag)", res.Statuses)
	}
}
