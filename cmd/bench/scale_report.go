package main

import (
	"fmt"
	"io"
	"math"
	"time"
)

// evaluateScale fills in the scale targets (reported, never part of -enforce: the default
// run does not create a million sessions).
func (rp *report) evaluateScale() {
	if len(rp.Scale) == 0 {
		return
	}
	add := func(name string, can, pass bool, detail string) {
		rp.ScaleTargets = append(rp.ScaleTargets, target{Name: name, Pass: can && pass, Missed: !can, Detail: detail})
	}
	largest := 0
	for _, r := range rp.Scale {
		if r.measured() {
			largest = max(largest, r.N)
		}
	}
	at := func(n int, shape string) (scaleRow, bool) {
		for _, r := range rp.Scale {
			if r.N == n && r.Shape == shape && r.measured() {
				return r, true
			}
		}
		return scaleRow{}, false
	}
	// RSS at 1M, both shapes (peak RSS of the fresh gateway).
	z, okZ := at(1_000_000, "zipf")
	u, okU := at(1_000_000, "uniform")
	detail := "scale-1m not run (opt-in: -scenarios all,scale-1m)"
	if okZ || okU {
		detail = fmt.Sprintf("peak RSS Zipf %s, uniform %s", mib(z.RSSPeak), mib(u.RSSPeak))
	}
	add("gateway RSS ≤ 256 MiB at 1M sessions, both shapes", okZ && okU && z.RSSPeak > 0 && u.RSSPeak > 0,
		z.RSSPeak <= scaleRSSLimit && u.RSSPeak <= scaleRSSLimit, detail)
	if largest == 0 {
		add("scale rows", false, false, "none measured")
		return
	}
	n := human(float64(largest))
	for _, c := range []struct {
		shape string
		min   float64
		what  string
	}{{"zipf", 0.75, "Zipf"}, {"uniform", 0.5, "uniform 100k"}} {
		name := fmt.Sprintf("authorize ≥ %.2g × HTTP ceiling, %s shape, %s sessions", c.min, c.what, n)
		r, ok := at(largest, c.shape)
		if !ok || r.Ceiling <= 0 {
			add(name, false, false, "not measured")
			continue
		}
		x := r.Res.RPS() / r.Ceiling
		add(name, true, x >= c.min, fmt.Sprintf("%.2f × (%.0f vs %.0f req/s)", x, r.Res.RPS(), r.Ceiling))
	}
	worstMem, tracking := -1.0, int64(0)
	for _, r := range rp.Scale {
		if r.N == largest && r.measured() {
			worstMem = math.Max(worstMem, r.MemAfter)
			tracking = max(tracking, r.Tracking)
		}
	}
	add(fmt.Sprintf("Redis ≤ 400 B of used_memory per session after the hot path, %s sessions", n), worstMem >= 0, worstMem <= 400,
		fmt.Sprintf("%.0f B (tracking_total_keys %d: with 0 the server keeps no per-key state for reads, so reading every session adds nothing)", worstMem, tracking))
	worst, unknown := 0.0, 0
	for _, r := range rp.Scale {
		switch {
		case !r.measured():
		case r.RT < 0:
			unknown++
		default:
			worst = math.Max(worst, r.RT)
		}
	}
	add("≤ 1 Redis round trip per authorize (scale rows)", unknown == 0, worst <= 1.02, fmt.Sprintf("worst %.2f", worst))
}

// printScale writes the scale section.
func (rp *report) printScale(w io.Writer) {
	if len(rp.Scale) == 0 && len(rp.ScaleBatches) == 0 {
		return
	}
	fmt.Fprintf(w, "\nScale (issue 12): live sessions, one per user; each row a fresh gateway with the default settings; Zipf s=%.1f over all N (a precomputed draw), uniform: random draws from min(N, %s) sessions:\n",
		scaleZipfS, human(scaleUniformSet))
	if len(rp.ScaleBatches) > 0 {
		m := [][]string{{"live sessions", "created", "took", "rate", "retries", "through"}}
		for _, c := range rp.ScaleBatches {
			rate := fmt.Sprintf("%.0f/s", c.Rate())
			if c.Err != "" {
				rate += " (" + c.Err + ")"
			}
			m = append(m, []string{fmt.Sprint(c.N), fmt.Sprint(c.Added), c.Took.Round(100 * time.Millisecond).String(), rate, fmt.Sprint(c.Retries), c.How})
		}
		table(w, m)
		fmt.Fprintln(w)
	}
	t := [][]string{{"sessions", "shape", "distinct in script", "req/s", "p50 ms", "p99 ms", "× HTTP ceiling", "expected answers",
		"cache hits", "round trips/req", "CPU µs/req gateway / Redis", "RSS start / end / peak", "Go heap in use", "Redis B/session before / after", "tracking keys"}}
	for _, r := range rp.Scale {
		if !r.measured() {
			t = append(t, []string{fmt.Sprint(r.N), r.Shape, fmt.Sprint(r.Distinct), r.Skip, "–", "–", "–", "–", "–", "–", "–", "–", "–", "–", "–"})
			continue
		}
		x := "–"
		if r.Ceiling > 0 {
			x = fmt.Sprintf("%.2f (%.0f: %.0f / %.0f)", r.Res.RPS()/r.Ceiling, r.Ceiling, r.CeilingBefore, r.CeilingAfter)
		}
		share, other := row{Res: r.Res, Expect: []int{200}}.okShare()
		ok := fmt.Sprintf("%.1f%%", 100*share)
		if other != "" {
			ok += " (" + other + ")"
		}
		hr := "–"
		if h := r.HitRatio(); h >= 0 {
			hr = fmt.Sprintf("%.1f%%", 100*h)
		}
		rt := "–"
		if r.RT >= 0 {
			rt = fmt.Sprintf("%.2f", r.RT)
		}
		cpu := func(us float64) string {
			if us < 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f", us)
		}
		t = append(t, []string{fmt.Sprint(r.N), r.Shape, fmt.Sprint(r.Distinct), fmt.Sprintf("%.0f", r.Res.RPS()), ms(r.Res.P50), ms(r.Res.P99), x, ok, hr, rt,
			cpu(r.GatewayCPU) + " / " + cpu(r.RedisCPU),
			fmt.Sprintf("%s / %s / %s", mib(r.RSSStart), mib(r.RSSEnd), mib(r.RSSPeak)), mib(r.HeapInuse),
			fmt.Sprintf("%.0f / %.0f", r.MemBefore, r.MemAfter), fmt.Sprint(r.Tracking)})
	}
	table(w, t)
	fmt.Fprintln(w, "\nScale targets (reported only; -enforce ignores them):")
	printTargets(w, rp.ScaleTargets)
}
