package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
)

// row is one measured (or skipped) scenario.
type row struct {
	Key, Name string
	Gateway   bool   // a gateway operation: the one-round-trip target applies
	Skip      string // "failed: …"
	Res       wrkResult
	Cmds      commandStats
	Client    clientCalls // the server's own Redis client counters (gateway, naive)
	RT        float64     // Redis round trips per request; < 0 when unknown
	Expect    []int
	Note      string
}

func (r row) measured() bool { return r.Skip == "" && r.Res.Requests > 0 }

// okShare is the share of answers with an expected status, and a summary of the others.
func (r row) okShare() (float64, string) {
	if r.Res.Requests == 0 {
		return 0, ""
	}
	if len(r.Res.Statuses) > 0 {
		var ok int64
		other := map[int]int64{}
		for code, n := range r.Res.Statuses {
			if slices.Contains(r.Expect, code) {
				ok += n
			} else {
				other[code] = n
			}
		}
		return float64(ok) / float64(r.Res.Requests), statusSummary(other)
	}
	bad := r.Res.StatusErrors
	if bad == 0 {
		return 1, ""
	}
	return float64(r.Res.Requests-bad) / float64(r.Res.Requests), fmt.Sprintf("non-2xx×%s", human(float64(bad)))
}

// memRow is one line of the memory-per-object table.
type memRow struct {
	Object string
	Keys   string
	Bytes  int64 // < 0: not measured
	Max    int64
	Note   string
}

// target is one of the acceptance targets.
type target struct {
	Name   string
	Pass   bool
	Missed bool // could not be measured
	Detail string
}

// report is everything printed at the end.
type report struct {
	Machine string
	Command string
	Rows    []row
	// Paired: the HTTP ceiling and authorize by session; LimitPaired: quote-get-nolimit and
	// quote-get (gateways with rate limits off and on, both running). Each decides its target
	// by its median.
	Paired, LimitPaired pairedRounds
	// RulesPaired: authz-norules and authz-rules (gateways without and with access rules).
	RulesPaired pairedRounds
	// EventsPaired: each write row's events-off twin and the row, by the row's key.
	EventsPaired map[string]pairedRounds
	Memory       []memRow
	Patterns     []*keyGroup
	Targets      []target
	// The scale scenarios (issue 12): their own table and targets.
	Scale        []scaleRow
	ScaleBatches []scaleBatch
	ScaleTargets []target
}

func (rp *report) row(key string) (row, bool) {
	for _, r := range rp.Rows {
		if r.Key == key && r.measured() {
			return r, true
		}
	}
	return row{}, false
}

func ratio(a, b row, ok bool) string {
	if !ok || b.Res.RPS() == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a.Res.RPS()/b.Res.RPS())
}

// evaluate fills in the targets from the rows and the memory table.
func (rp *report) evaluate(sessionHashLimit int64) {
	authz, okA := rp.row("authz-session")
	ceil, okC := rp.row("ceiling-http")
	naive, okN := rp.row("naive")
	add := func(name string, can bool, pass bool, detail string) {
		rp.Targets = append(rp.Targets, target{Name: name, Pass: can && pass, Missed: !can, Detail: detail})
	}
	switch {
	case len(rp.Paired) > 0:
		x := rp.Paired.median()
		detail := fmt.Sprintf("%.2f × (median of %d paired rounds", x, len(rp.Paired))
		if okA && okC {
			detail += fmt.Sprintf("; the table's rows: %.2f ×", authz.Res.RPS()/ceil.Res.RPS())
		}
		add("authorize by session (cache on) ≥ 0.75 × HTTP ceiling", true, x >= 0.75, detail+")")
	case okA && okC:
		x := authz.Res.RPS() / ceil.Res.RPS()
		add("authorize by session (cache on) ≥ 0.75 × HTTP ceiling", true, x >= 0.75, fmt.Sprintf("%.2f ×", x))
	default:
		add("authorize by session (cache on) ≥ 0.75 × HTTP ceiling", false, false, "not measured")
	}
	switch {
	case okA && okN:
		x := authz.Res.RPS() / naive.Res.RPS()
		add("authorize by session (cache on) ≥ 1.5 × naive design", true, x >= 1.5, fmt.Sprintf("%.2f ×", x))
	default:
		add("authorize by session (cache on) ≥ 1.5 × naive design", false, false, "not measured")
	}
	limited, okL := rp.row("quote-get")
	unlimited, okU := rp.row("quote-get-nolimit")
	const limitCost = "rate limiting costs ≤ 5% of a bearer read's throughput"
	rows := func() string {
		return fmt.Sprintf("%.0f req/s limited, %.0f off (%.2f ×); round trips %.2f and %.2f",
			limited.Res.RPS(), unlimited.Res.RPS(), limited.Res.RPS()/unlimited.Res.RPS(), limited.RT, unlimited.RT)
	}
	switch {
	case len(rp.LimitPaired) > 0:
		x := rp.LimitPaired.median()
		detail := fmt.Sprintf("GET /v1/quotes/{id}: %.2f × (median of %d paired rounds, limits on ÷ off", x, len(rp.LimitPaired))
		if okL && okU {
			detail += "; the table's rows: " + rows()
		}
		add(limitCost, true, x >= 0.95, detail+")")
	case okL && okU:
		add(limitCost, true, limited.Res.RPS()/unlimited.Res.RPS() >= 0.95, "GET /v1/quotes/{id}: "+rows())
	default:
		add(limitCost, false, false, "not measured")
	}
	rp.evaluateRules()
	rp.evaluateEvents()
	var over, unknown, skipped []string
	worst := 0.0
	for _, r := range rp.Rows {
		if !r.Gateway {
			continue
		}
		switch {
		case !r.measured():
			skipped = append(skipped, r.Key)
		case r.RT < 0:
			unknown = append(unknown, r.Key)
		default:
			worst = math.Max(worst, r.RT)
			// A background loop (the case sweeper) adds a few calls per run: allow 2%.
			if r.RT > 1.02 {
				over = append(over, fmt.Sprintf("%s %.2f", r.Key, r.RT))
			}
		}
	}
	detail := fmt.Sprintf("worst %.2f", worst)
	if len(over) > 0 {
		detail = "over: " + strings.Join(over, ", ")
	}
	if len(unknown) > 0 {
		detail += "; unknown: " + strings.Join(unknown, ", ")
	}
	if len(skipped) > 0 {
		detail += "; not measured: " + strings.Join(skipped, ", ")
	}
	add("≤ 1 Redis round trip per operation", len(unknown) == 0 && len(skipped) == 0, len(over) == 0, detail)
	for _, m := range rp.Memory {
		switch {
		case strings.HasPrefix(m.Object, "session hash, plain"):
			add(fmt.Sprintf("session hash ≤ %d B of Redis memory", sessionHashLimit), m.Bytes >= 0, m.Max <= sessionHashLimit,
				fmt.Sprintf("%d B (max of %s)", m.Max, m.Keys))
			return
		case strings.HasPrefix(m.Object, perUserHashObject):
			// The per-user layout has no session hash: the one key a one-session user has is the
			// user's hash, which also carries the five fields every hash does (the data-model
			// rules; about 70 B of listpack) for all the user's sessions. It is held to issue 23's
			// bound on a session all-in; the session hash's bound is the per-session layout's.
			add(fmt.Sprintf("a one-session user's hash ≤ %d B of Redis memory (a session all-in)", userHashLimit), m.Bytes >= 0, m.Max <= userHashLimit,
				fmt.Sprintf("per-user layout: the user's hash with one plain session, %d B (max of %s), holds what the per-session layout kept in its session hash (≤ %d B) and device index", m.Max, m.Keys, sessionHashLimit))
			return
		}
	}
	add(fmt.Sprintf("session hash ≤ %d B of Redis memory", sessionHashLimit), false, false, "not measured")
}

// userHashLimit bounds the per-user layout's hash of a one-session user: issue 23's "Redis
// stays ≤ 400 B per session all-in" (scale_report.go holds used_memory per session at 1M to the
// same figure).
const userHashLimit = 400

// failed reports whether any target was missed or not measured.
func (rp *report) failed() bool {
	for _, t := range rp.Targets {
		if !t.Pass {
			return true
		}
	}
	return false
}

// print writes the tables as Markdown (aligned, so they read in a terminal too).
func (rp *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n%s\n%s\n\n", rp.Machine, rp.Command)
	ceil, okC := rp.row("ceiling-http")
	naive, okN := rp.row("naive")
	redis, okR := rp.row("ceiling-redis")
	t := [][]string{{"scenario", "req/s", "p50 ms", "p99 ms", "p99.9 ms", "expected answers", "Redis cmds/req", "round trips/req", "× HTTP ceiling", "× naive", "× Redis ceiling"}}
	var notes []string
	for _, r := range rp.Rows {
		if !r.measured() {
			t = append(t, []string{r.Name, r.Skip, "–", "–", "–", "–", "–", "–", "–", "–", "–"})
			continue
		}
		share, other := r.okShare()
		ok := fmt.Sprintf("%.1f%%", 100*share)
		if other != "" {
			ok += " (" + other + ")"
		}
		rt := "–"
		if r.RT >= 0 {
			rt = fmt.Sprintf("%.2f", r.RT)
		}
		t = append(t, []string{r.Name, fmt.Sprintf("%.0f", r.Res.RPS()), ms(r.Res.P50), ms(r.Res.P99), ms(r.Res.P999), ok,
			fmt.Sprintf("%.2f", float64(r.Cmds.total())/float64(r.Res.Requests)), rt,
			ratio(r, ceil, okC), ratio(r, naive, okN), ratio(r, redis, okR)})
		if se := r.Res.SocketErrors(); se > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d socket errors/timeouts", r.Key, se))
		}
		if r.Note != "" {
			notes = append(notes, r.Key+": "+r.Note)
		}
	}
	table(w, t)
	fmt.Fprintln(w, "\nPer request: Redis commands (INFO commandstats deltas; commands inside a script or MULTI count too);\n"+
		"client calls (the server's rueidis counters: one per Do/DoMulti/DoCache; a script or a pipeline is one):")
	for _, r := range rp.Rows {
		if r.measured() {
			b := r.Cmds.breakdown(r.Res.Requests, 8)
			if b == "" {
				b = "none"
			}
			if c := r.Client.breakdown(r.Res.Requests); c != "" {
				b += "; client calls: " + c
			}
			fmt.Fprintf(w, "- %s: %s\n", r.Key, b)
		}
	}
	printPaired(w, "HTTP ceiling and authorize by session back to back, order alternating; the ceiling target uses the median",
		"HTTP ceiling", "authorize by session", rp.Paired)
	printPaired(w, "quote-get without and with rate limits, two gateways on the same Redis back to back, order alternating; the rate-limit target uses the median",
		"quote-get-nolimit", "quote-get (limits on)", rp.LimitPaired)
	printPaired(w, "authorize by session with the forwarded request, two gateways without and with the access rules file on the same Redis, back to back, order alternating; the rules' cost target uses the median",
		"authz-norules", fmt.Sprintf("authz-rules (%d rules)", rulesCount), rp.RulesPaired)
	rp.printEventsPaired(w)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
	if len(rp.Memory) > 0 {
		fmt.Fprintln(w, "\nRedis memory per object (MEMORY USAGE … SAMPLES 0):")
		m := [][]string{{"object", "keys", "bytes", "max bytes", "note"}}
		for _, r := range rp.Memory {
			b, mx := "–", "–"
			if r.Bytes >= 0 {
				b, mx = fmt.Sprint(r.Bytes), fmt.Sprint(r.Max)
			}
			m = append(m, []string{r.Object, r.Keys, b, mx, r.Note})
		}
		table(w, m)
	}
	if len(rp.Patterns) > 0 {
		fmt.Fprintln(w, "\nEvery key the run left, by pattern (sampled MEMORY USAGE):")
		m := [][]string{{"pattern", "type", "keys", "avg bytes", "max bytes"}}
		for _, g := range rp.Patterns {
			m = append(m, []string{"`" + g.Pattern + "`", g.Type, fmt.Sprint(g.Count), fmt.Sprintf("%.0f", g.Avg), fmt.Sprint(g.Max)})
		}
		table(w, m)
	}
	fmt.Fprintln(w, "\nTargets:")
	printTargets(w, rp.Targets)
	rp.printScale(w)
}

// printTargets writes one line per target: PASS, FAIL or NOT MEASURED, its name and detail.
func printTargets(w io.Writer, ts []target) {
	for _, tg := range ts {
		mark := "PASS"
		switch {
		case tg.Missed:
			mark = "NOT MEASURED"
		case !tg.Pass:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "- %s %s: %s\n", mark, tg.Name, tg.Detail)
	}
}

// printPaired writes one pair's rounds (ratio = subject ÷ ref) and their median.
func printPaired(w io.Writer, title, ref, subject string, ps pairedRounds) {
	if len(ps) == 0 {
		return
	}
	fmt.Fprintf(w, "\nPaired rounds (%s):\n", title)
	m := [][]string{{"round", ref + " req/s", subject + " req/s", "ratio"}}
	for i, p := range ps {
		m = append(m, []string{fmt.Sprint(i + 1), fmt.Sprintf("%.0f", p.Ref), fmt.Sprintf("%.0f", p.Subject), fmt.Sprintf("%.2f", p.Subject/p.Ref)})
	}
	table(w, append(m, []string{"median", "", "", fmt.Sprintf("%.2f", ps.median())}))
}

func ms(us float64) string { return fmt.Sprintf("%.2f", us/1000) }

// human renders a count compactly: 950, 9.9k, 1.2M.
func human(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.0fk", n/1e3)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}

// table writes rows as an aligned Markdown table (first row is the header).
func table(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			b.WriteString(" " + c + strings.Repeat(" ", width[i]-len([]rune(c))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

// machine describes where the run happened.
func machine(redisVersion, wrkVer string) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("Machine: %s, %d CPUs%s%s; %s; Redis %s on loopback; %s.", cpu, runtime.NumCPU(), mem, kernel,
		runtime.Version(), redisVersion, wrkVer)
}
