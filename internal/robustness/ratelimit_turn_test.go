package robustness

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Where a window over the limit came from: each limited answer's RateLimit field says what
// the limiter left of the limit in its own window, whose boundary is the replica's estimate of
// the server's clock, not the check's; when a replica's remaining goes up, its window turned.
// So a check window's admissions split by the limiter window each was counted in: over the
// limit within one limiter window is the limiter admitting too much; over it only summed
// across a turn is the two clocks' windows not lining up. docs/ROBUSTNESS.md, "The rate
// limits in a cluster's quiet windows".

// remaining is the r= of the RateLimit item whose RateLimit-Policy item has q=limit (the
// fields list their policies in the same order), or -1.
func remaining(h http.Header, limit int) int {
	policies, items := strings.Split(h.Get("RateLimit-Policy"), ","), strings.Split(h.Get("RateLimit"), ",")
	for i, p := range policies {
		if i < len(items) && slices.Contains(strings.Split(strings.TrimSpace(p), ";"), "q="+strconv.Itoa(limit)) {
			for _, kv := range strings.Split(items[i], ";") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(kv), "r="); ok {
					if n, err := strconv.Atoi(v); err == nil {
						return n
					}
				}
			}
		}
	}
	return -1
}

// turns marks each admitted op of ops (sorted by call) after which its replica's limiter
// window turned: its remaining above the one the replica answered just before.
func turns(ops []limitedOp) map[int]bool {
	out, last := map[int]bool{}, map[*gateway]int{}
	for i, op := range ops {
		if !op.admitted || op.remaining < 0 {
			continue
		}
		if prev, ok := last[op.gw]; ok && op.remaining > prev {
			out[i] = true
		}
		last[op.gw] = op.remaining
	}
	return out
}

// bySegment splits the admissions certainly inside the check window [from, to) (ops sorted by
// call, turned from turns) by the limiter window each was counted in, per replica: 0 the one
// current at the check window's start, 1 the next (after the replica's first turn within it),
// and so on; it answers the counts per segment summed over the replicas.
func bySegment(ops []limitedOp, turned map[int]bool, from, to int64) []int {
	seg := map[*gateway]int{}
	var out []int
	for i, op := range ops {
		w := op.call.UnixMilli()
		if w >= to || !op.admitted {
			continue
		}
		if w >= from && turned[i] {
			seg[op.gw]++
		}
		if w < from || op.ret.UnixMilli() >= to {
			continue
		}
		for len(out) <= seg[op.gw] {
			out = append(out, 0)
		}
		out[seg[op.gw]]++
	}
	return out
}

// splitNote says how a check window's admissions fall into the limiters' windows.
func splitNote(counts []int) string {
	return fmt.Sprintf("by the limiters' windows as their RateLimit fields show: %v (the one current at its start, then the next)", counts)
}
