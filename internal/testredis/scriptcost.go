package testredis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
)

// The server-side cost of scripts, for benchmarks on a private server (StartServer): the
// gateway's own clock and the shared machine's load do not blur it.

// ResetScriptCost clears the server's command statistics (CONFIG RESETSTAT).
func ResetScriptCost(t testing.TB, c rueidis.Client) {
	t.Helper()
	if err := c.Do(context.Background(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// ScriptCost is the server's mean time per EVALSHA since the last reset, in µs (INFO
// commandstats' usec_per_call), 0 when none ran.
func ScriptCost(t testing.TB, c rueidis.Client) float64 {
	t.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, _ := strconv.ParseFloat(v, 64)
					return f
				}
			}
		}
	}
	return 0
}

// ServerCPU is the server process's CPU time so far (INFO cpu: used_cpu_user + used_cpu_sys),
// in µs: with the append-only file on, what a write costs to propagate counts too.
func ServerCPU(t testing.TB, c rueidis.Client) float64 {
	t.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	var us float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			us += f * 1e6
		}
	}
	return us
}

// CommandCost is where the scripts' time went since the last reset: each command they called
// (INFO commandstats, EVALSHA and the statistics' own commands left out), most time first, as
// calls and µs per script run of runs: "zadd 11.00× 5.4 µs, xadd 2.00× 2.6 µs, ...".
func CommandCost(t testing.TB, c rueidis.Client, runs int) string {
	t.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	type stat struct {
		name        string
		calls, usec float64
	}
	var stats []stat
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(strings.TrimSpace(line), "cmdstat_") || slices.Contains([]string{"evalsha", "info", "config|resetstat"}, name) {
			continue
		}
		st := stat{name: name}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				st.calls = f / float64(runs)
			case "usec":
				st.usec = f / float64(runs)
			}
		}
		stats = append(stats, st)
	}
	slices.SortFunc(stats, func(a, b stat) int { return int(b.usec*1000) - int(a.usec*1000) })
	parts := make([]string, len(stats))
	for i, st := range stats {
		parts[i] = fmt.Sprintf("%s %.2f× %.2f µs", st.name, st.calls, st.usec)
	}
	return strings.Join(parts, ", ")
}

// PrivateStore opens a private Redis 8 without persistence (StartServer) for a script-cost
// benchmark (skipped when the run provides no Redis 8 server binary, EnvRedis8Server).
func PrivateStore(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, Backend{Name: "private", Env: EnvRedis8, URL: StartServer(t, "--appendonly", "no").URL(), Broadcast: true})
}
