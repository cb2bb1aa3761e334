package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The scale scenarios' measurements of the processes: RSS, CPU, Redis memory, the gateway's
// gauges, a CPU profile.

// usedMemory is INFO memory used_memory (-1 when unreadable).
func (b *bench) usedMemory(ctx context.Context) int64 {
	v, err := strconv.ParseInt(infoField(ctx, b.redis.Client, "memory", "used_memory"), 10, 64)
	if err != nil {
		return -1
	}
	return v
}

// procStatus reads VmRSS and VmHWM (bytes) of pid from /proc.
func procStatus(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	return parseProcStatus(string(b))
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on Linux).
const clockTicks = 100

// procCPU is the CPU time (user + system, seconds) pid has used; -1 when unreadable.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	return parseProcCPU(string(b))
}

// parseProcCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line; the
// command name (field 2) is in parentheses and may hold spaces, so fields count from the last ')'.
func parseProcCPU(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(u+st) / clockTicks
}

// redisCPU is the private Redis server's CPU time (used_cpu_user + used_cpu_sys, seconds);
// -1 when unreadable.
func (b *bench) redisCPU(ctx context.Context) float64 {
	u, err1 := strconv.ParseFloat(infoField(ctx, b.redis.Client, "cpu", "used_cpu_user"), 64)
	st, err2 := strconv.ParseFloat(infoField(ctx, b.redis.Client, "cpu", "used_cpu_sys"), 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + st
}

// perRequestMicros is the CPU time between two readings (seconds) per request, in µs; -1 when
// either reading failed or nothing was measured.
func perRequestMicros(before, after float64, requests int64) float64 {
	if before < 0 || after < before || requests <= 0 {
		return -1
	}
	return (after - before) * 1e6 / float64(requests)
}

func parseProcStatus(s string) (rss, hwm int64) {
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	return rss, hwm
}

// gatewayGauges are the figures the scale rows read from the gateway's /metrics.
type gatewayGauges struct {
	Hits, Misses float64 // hashgate_session_auth_cache_lookups by result
	HeapInuse    float64 // go_memstats_heap_inuse_bytes
	Calls        clientCalls
	CallsOK      bool
}

func parseGatewayGauges(text string) gatewayGauges {
	var g gatewayGauges
	g.Calls, g.CallsOK = parseClientCalls(text)
	for _, line := range strings.Split(text, "\n") {
		name, labels, v, ok := promSample(line)
		if !ok {
			continue
		}
		switch name {
		case "hashgate_session_auth_cache_lookups", "hashgate_session_auth_cache_lookups_total":
			switch promLabel(labels, "result") {
			case "hit":
				g.Hits += v
			case "miss":
				g.Misses += v
			}
		case "go_memstats_heap_inuse_bytes":
			g.HeapInuse = v
		}
	}
	return g
}

func scrapeGauges(ctx context.Context, url string) (gatewayGauges, error) {
	a := &api{base: url, hc: &http.Client{Timeout: 10 * time.Second}}
	r, err := a.do(ctx, "GET", "", nil, nil)
	if err != nil {
		return gatewayGauges{}, err
	}
	if err := r.check("GET /metrics", 200); err != nil {
		return gatewayGauges{}, err
	}
	return parseGatewayGauges(string(r.Body)), nil
}

// benchPprofAddr is where a profiled scale gateway serves pprof (one gateway at a time).
const benchPprofAddr = "127.0.0.1:16060"

// cpuProfile saves a CPU profile of d from the gateway's pprof listener to path.
func cpuProfile(ctx context.Context, path string, d time.Duration) error {
	secs := max(1, int(d/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", benchPprofAddr, secs), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", res.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
