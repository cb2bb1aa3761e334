package handlers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/redis/rueidis"
)

// The Redis snapshot the hostile matrix compares before and after each refusal.

// hostileKeyState is what a write would change: the value (with its type) and the TTLs.
type hostileKeyState struct {
	value     string
	pttl      int64
	fieldTTLs []int64
}

// hostileSnapshot reads every key under prefix on every node: type and value, PTTL, and the TTL of
// each hash field where the server has field expiration.
func hostileSnapshot(t *testing.T, s *store.Store, prefix string) map[string]hostileKeyState {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	for _, node := range s.Client.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			for _, k := range e.Elements {
				seen[k] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]hostileKeyState, len(keys))
	if len(keys) == 0 {
		return out
	}
	c := s.Client
	typeCmds := make([]rueidis.Completed, len(keys))
	for i, k := range keys {
		typeCmds[i] = c.B().Type().Key(k).Build()
	}
	types := c.DoMulti(ctx, typeCmds...)
	var cmds []rueidis.Completed
	for i, k := range keys {
		typ, err := types[i].ToString()
		if err != nil {
			t.Fatalf("type %s: %v", k, err)
		}
		switch typ {
		case "hash":
			cmds = append(cmds, c.B().Hgetall().Key(k).Build())
		case "zset":
			cmds = append(cmds, c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build())
		case "string":
			cmds = append(cmds, c.B().Get().Key(k).Build())
		case "set":
			cmds = append(cmds, c.B().Smembers().Key(k).Build())
		case "list":
			cmds = append(cmds, c.B().Lrange().Key(k).Start(0).Stop(-1).Build())
		case "stream":
			cmds = append(cmds, c.B().Xrange().Key(k).Start("-").End("+").Build())
		default:
			cmds = append(cmds, c.B().Type().Key(k).Build()) // "none": expired since the scan
		}
		cmds = append(cmds, c.B().Pttl().Key(k).Build())
	}
	res := c.DoMulti(ctx, cmds...)
	var ttlCmds []rueidis.Completed
	var ttlKeys []string
	for i, k := range keys {
		typ, _ := types[i].ToString()
		var value string
		switch typ {
		case "hash":
			m, err := res[2*i].AsStrMap()
			if err != nil {
				t.Fatalf("hgetall %s: %v", k, err)
			}
			fields := make([]string, 0, len(m))
			for f := range m {
				fields = append(fields, f)
			}
			sort.Strings(fields)
			var b strings.Builder
			for _, f := range fields {
				fmt.Fprintf(&b, "%q=%q ", f, m[f])
			}
			value = b.String()
			if s.Caps.FieldExpiry != store.FieldExpiryFallback && len(fields) > 0 {
				ttlCmds = append(ttlCmds, c.B().Httl().Key(k).Fields().Numfields(int64(len(fields))).Field(fields...).Build())
				ttlKeys = append(ttlKeys, k)
			}
		case "stream":
			entries, err := res[2*i].AsXRange()
			if err != nil {
				t.Fatalf("xrange %s: %v", k, err)
			}
			var b strings.Builder
			for _, e := range entries {
				fmt.Fprintf(&b, "%s%v ", e.ID, e.FieldValues)
			}
			value = b.String()
		case "zset", "set", "list":
			vs, err := res[2*i].AsStrSlice()
			if err != nil {
				t.Fatalf("read %s: %v", k, err)
			}
			if typ == "set" {
				sort.Strings(vs)
			}
			value = strings.Join(vs, "\x1f")
		default:
			value, _ = res[2*i].ToString()
		}
		pttl, err := res[2*i+1].AsInt64()
		if err != nil {
			t.Fatalf("pttl %s: %v", k, err)
		}
		out[k] = hostileKeyState{value: typ + ":" + value, pttl: pttl}
	}
	if len(ttlCmds) > 0 {
		for i, r := range c.DoMulti(ctx, ttlCmds...) {
			ttls, err := r.AsIntSlice()
			if err != nil {
				t.Fatalf("httl %s: %v", ttlKeys[i], err)
			}
			st := out[ttlKeys[i]]
			st.fieldTTLs = ttls
			out[ttlKeys[i]] = st
		}
	}
	return out
}

// hostileDiff describes what changed between two snapshots ("" for nothing). TTLs only run
// down: one that grew (beyond rounding) was written.
func hostileDiff(before, after map[string]hostileKeyState) string {
	var diffs []string
	for k, a := range after {
		b, ok := before[k]
		switch {
		case !ok:
			diffs = append(diffs, "created "+k)
		case a.value != b.value:
			diffs = append(diffs, "changed "+k)
		case a.pttl > b.pttl+50 || (b.pttl >= 0) != (a.pttl >= 0):
			diffs = append(diffs, fmt.Sprintf("TTL of %s %d → %d ms", k, b.pttl, a.pttl))
		case len(a.fieldTTLs) == len(b.fieldTTLs):
			for i := range a.fieldTTLs {
				if a.fieldTTLs[i] > b.fieldTTLs[i] {
					diffs = append(diffs, fmt.Sprintf("field TTL in %s %d → %d s", k, b.fieldTTLs[i], a.fieldTTLs[i]))
				}
			}
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diffs = append(diffs, "deleted "+k)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}
