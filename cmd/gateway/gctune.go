package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The gateway's live heap is small (mostly the client-side cache), while every request
// allocates a few kilobytes that die at once. With Go's default GOGC=100 the collector then
// runs dozens of times a second under load; at 400 it runs a quarter as often, for a heap that
// stays a few tens of megabytes (measured: docs/PERFORMANCE.md). A memory limit taken from the
// container keeps a larger cache from pushing the process past its cgroup limit. Both apply
// only when the operator has not set GOGC or GOMEMLIMIT, which the Go runtime honours as usual.
const (
	defaultGCPercent = 400
	// memLimitShare is the share of the cgroup memory limit given to GOMEMLIMIT; the rest is
	// headroom for what the Go runtime does not count (stacks in flight, OS buffers).
	memLimitShare = 0.85
	// defaultMemoryLimit is GOMEMLIMIT when neither the operator nor a cgroup sets one: a soft
	// limit under which GOGC=400 no longer lets the heap grow to five times the live data
	// (every cache is bounded: the live heap stays well under it, so the collector only works
	// harder when garbage, not data, would pass it). Measured at 1M sessions without it: RSS
	// 272–343 MiB against the 256 MiB target (docs/PERFORMANCE.md).
	defaultMemoryLimit = 192 << 20
)

// cgroupMemoryFiles are where cgroup v2 and v1 publish the memory limit.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// gcPlan is what tuneGC decided; zero fields mean "left to the runtime".
type gcPlan struct {
	GCPercent   int
	MemoryLimit int64
}

func (p gcPlan) String() string {
	var parts []string
	if p.GCPercent != 0 {
		parts = append(parts, "GOGC="+strconv.Itoa(p.GCPercent))
	}
	if p.MemoryLimit != 0 {
		parts = append(parts, fmt.Sprintf("GOMEMLIMIT=%dMiB", p.MemoryLimit>>20))
	}
	return strings.Join(parts, " ")
}

// planGC decides the collector settings from the environment and the cgroup memory limit
// (readFile reads a cgroup file; an error or "max" means no limit).
func planGC(getenv func(string) string, readFile func(string) ([]byte, error)) gcPlan {
	var p gcPlan
	if getenv("GOGC") == "" {
		p.GCPercent = defaultGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		for _, f := range cgroupMemoryFiles {
			b, err := readFile(f)
			if err != nil {
				continue
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			// cgroup v1 reports "no limit" as a huge number (about 2^63 rounded to pages).
			if err == nil && n > 0 && n < 1<<60 {
				p.MemoryLimit = int64(float64(n) * memLimitShare)
			}
			break
		}
		if p.MemoryLimit == 0 {
			p.MemoryLimit = defaultMemoryLimit
		}
	}
	return p
}

// tuneGC applies planGC's decision to this process and returns it.
func tuneGC() gcPlan {
	p := planGC(os.Getenv, os.ReadFile)
	if p.GCPercent != 0 {
		debug.SetGCPercent(p.GCPercent)
	}
	if p.MemoryLimit != 0 {
		debug.SetMemoryLimit(p.MemoryLimit)
	}
	return p
}
