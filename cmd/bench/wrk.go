package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// resultMarker starts the one line the generated scripts' done() prints.
const resultMarker = "HGBENCH "

// wrkResult is what one wrk run measured (latencies in microseconds).
type wrkResult struct {
	Requests      int64          `json:"requests"`
	DurationUS    int64          `json:"duration_us"`
	Bytes         int64          `json:"bytes"`
	ConnectErrors int64          `json:"connect_errors"`
	ReadErrors    int64          `json:"read_errors"`
	WriteErrors   int64          `json:"write_errors"`
	StatusErrors  int64          `json:"status_errors"` // responses outside 2xx/3xx
	Timeouts      int64          `json:"timeouts"`
	P50           float64        `json:"p50_us"`
	P99           float64        `json:"p99_us"`
	P999          float64        `json:"p999_us"`
	Mean          float64        `json:"mean_us"`
	Max           float64        `json:"max_us"`
	Statuses      map[int]int64  `json:"-"`
	RawStatuses   map[string]any `json:"statuses"`
}

// RPS is the completed requests per second of the measured window.
func (r wrkResult) RPS() float64 {
	if r.DurationUS <= 0 {
		return 0
	}
	return float64(r.Requests) / (float64(r.DurationUS) / 1e6)
}

// SocketErrors is every connect, read, write and timeout error.
func (r wrkResult) SocketErrors() int64 {
	return r.ConnectErrors + r.ReadErrors + r.WriteErrors + r.Timeouts
}

var errNoResult = errors.New("wrk printed no result line (did the script's done() run?)")

// parseWrkOutput finds the result line in wrk's output.
func parseWrkOutput(out []byte) (wrkResult, error) {
	var line string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); strings.HasPrefix(t, resultMarker) {
			line = strings.TrimPrefix(t, resultMarker)
		}
	}
	if line == "" {
		return wrkResult{}, errNoResult
	}
	var r wrkResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return wrkResult{}, fmt.Errorf("wrk result line: %w", err)
	}
	r.Statuses = map[int]int64{}
	for k, v := range r.RawStatuses {
		code, err := strconv.Atoi(k)
		n, ok := v.(float64)
		if err != nil || !ok {
			return wrkResult{}, fmt.Errorf("wrk result line: bad status entry %q", k)
		}
		r.Statuses[code] = int64(n)
	}
	r.RawStatuses = nil
	if r.Requests < 0 || r.DurationUS <= 0 {
		return wrkResult{}, fmt.Errorf("wrk result line: requests %d in %dµs", r.Requests, r.DurationUS)
	}
	return r, nil
}

// wrkRunner runs wrk with fixed load settings.
type wrkRunner struct {
	Bin         string
	Threads     int
	Connections int
	Timeout     time.Duration
	Dir         string // where scripts are written
}

// run loads baseURL with script for d and returns the measurement.
func (w wrkRunner) run(ctx context.Context, name string, s wrkScript, baseURL string, d time.Duration) (wrkResult, error) {
	src, err := renderScript(s, w.Threads)
	if err != nil {
		return wrkResult{}, err
	}
	path := filepath.Join(w.Dir, sanitize(name)+".lua")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		return wrkResult{}, err
	}
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	args := []string{
		"-t", strconv.Itoa(w.Threads), "-c", strconv.Itoa(w.Connections),
		"-d", strconv.Itoa(secs) + "s", "--timeout", strconv.Itoa(int(w.Timeout/time.Second)) + "s",
		"-s", path, baseURL,
	}
	rctx, cancel := context.WithTimeout(ctx, d+w.Timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(rctx, w.Bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", name, err, tail(out, 20))
	}
	r, err := parseWrkOutput(out)
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", name, err, tail(out, 20))
	}
	return r, nil
}

// wrkVersion is the first line of `wrk --version` (wrk exits 1 there).
func wrkVersion(bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	line, _, _ := strings.Cut(string(out), "\n")
	if i := strings.Index(line, " Copyright"); i > 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// statusSummary renders a status tally as "200×9.9k 412×12", largest first.
func statusSummary(st map[int]int64) string {
	type kv struct {
		code int
		n    int64
	}
	var all []kv
	for c, n := range st {
		all = append(all, kv{c, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].code < all[j].code
	})
	parts := make([]string, 0, len(all))
	for _, e := range all {
		parts = append(parts, fmt.Sprintf("%d×%s", e.code, human(float64(e.n))))
	}
	return strings.Join(parts, " ")
}
