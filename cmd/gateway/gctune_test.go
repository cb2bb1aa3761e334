package main

import (
	"errors"
	"os"
	"testing"
)

func TestPlanGC(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	tests := []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  gcPlan
	}{
		{"no cgroup limit", nil, nil, gcPlan{GCPercent: 400, MemoryLimit: 192 << 20}},
		{"cgroup v2 limit", nil, map[string]string{v2: "536870912\n"}, gcPlan{GCPercent: 400, MemoryLimit: 456340275}},
		{"cgroup v2 max", nil, map[string]string{v2: "max\n"}, gcPlan{GCPercent: 400, MemoryLimit: 192 << 20}},
		{"cgroup v1 limit", nil, map[string]string{v1: "1073741824"}, gcPlan{GCPercent: 400, MemoryLimit: 912680550}},
		{"cgroup v1 unlimited", nil, map[string]string{v1: "9223372036854771712"}, gcPlan{GCPercent: 400, MemoryLimit: 192 << 20}},
		{"operator's GOGC wins", map[string]string{"GOGC": "100"}, nil, gcPlan{MemoryLimit: 192 << 20}},
		{"operator's GOGC=off wins", map[string]string{"GOGC": "off"}, map[string]string{v2: "536870912"}, gcPlan{MemoryLimit: 456340275}},
		{"operator's GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "200MiB"}, map[string]string{v2: "536870912"}, gcPlan{GCPercent: 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := planGC(env(tt.env), files(tt.files)); got != tt.want {
				t.Fatalf("planGC = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := planGC(env(nil), func(string) ([]byte, error) { return nil, errors.New("denied") }); got != (gcPlan{GCPercent: 400, MemoryLimit: 192 << 20}) {
		t.Fatalf("unreadable cgroup: %+v", got)
	}
	if s := (gcPlan{GCPercent: 400, MemoryLimit: 512 << 20}).String(); s != "GOGC=400 GOMEMLIMIT=512MiB" {
		t.Fatalf("String() = %q", s)
	}
}
