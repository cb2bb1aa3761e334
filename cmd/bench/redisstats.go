package main

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// commandStats maps a command as INFO commandstats names it ("hmget", "client|caching") to its
// call count. Commands run inside a script or a MULTI are counted too.
type commandStats map[string]int64

// ignoredCommands are the benchmark's own probes, never the measured server's work.
var ignoredCommands = map[string]bool{"info": true}

// parseCommandStats reads the cmdstat_<name>:calls=N,... lines of INFO commandstats.
func parseCommandStats(info string) (commandStats, error) {
	st := commandStats{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		name, fields, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("commandstats: bad line %q", line)
		}
		calls := int64(-1)
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("commandstats: bad calls in %q", line)
				}
				calls = n
			}
		}
		if calls < 0 {
			return nil, fmt.Errorf("commandstats: no calls in %q", line)
		}
		st[strings.ToLower(name)] = calls
	}
	return st, sc.Err()
}

// delta is after − before for every command that ran in between (ignored commands dropped).
// A counter that went down (CONFIG RESETSTAT in between) counts from zero.
func (after commandStats) delta(before commandStats) commandStats {
	d := commandStats{}
	for name, n := range after {
		if ignoredCommands[name] {
			continue
		}
		prev := before[name]
		if n < prev {
			prev = 0
		}
		if n-prev > 0 {
			d[name] = n - prev
		}
	}
	return d
}

func (c commandStats) total() int64 {
	var t int64
	for _, n := range c {
		t += n
	}
	return t
}

// breakdown renders calls per request, largest first: "evalsha 1.00, hget 1.00".
func (c commandStats) breakdown(requests int64, max int) string {
	if requests <= 0 || len(c) == 0 {
		return ""
	}
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if c[names[i]] != c[names[j]] {
			return c[names[i]] > c[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for i, n := range names {
		per := float64(c[n]) / float64(requests)
		if i >= max || per < 0.005 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", n, per))
	}
	return strings.Join(parts, ", ")
}

func commandStatsOf(ctx context.Context, c rueidis.Client) (commandStats, error) {
	info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	return parseCommandStats(info)
}

// infoField reads one field of an INFO section.
func infoField(ctx context.Context, c rueidis.Client, section, field string) string {
	info, err := c.Do(ctx, c.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// Client-side round trips come from Prometheus text: the gateway's rueidisotel histogram
// counts every Do/DoMulti/DoCache call (a pipeline or a script is one), and cache hits are
// calls that never reached Redis. The naive baseline exports its own counter.
const (
	metricCalls     = "rueidis_command_duration_seconds_count"
	metricCacheHits = "rueidis_do_cache_hits"
	metricNaiveRT   = "hgbench_redis_round_trips_total"
)

// clientCalls is what a Redis client reported: calls by operation, and cache hits (calls
// answered from the client-side cache, so no round trip).
type clientCalls struct {
	Calls map[string]float64
	Hits  float64
}

// RoundTrips is every call that reached Redis.
func (c clientCalls) RoundTrips() float64 {
	t := -c.Hits
	for _, n := range c.Calls {
		t += n
	}
	return t
}

func (c clientCalls) sub(before clientCalls) clientCalls {
	d := clientCalls{Calls: map[string]float64{}, Hits: c.Hits - before.Hits}
	for op, n := range c.Calls {
		if v := n - before.Calls[op]; v > 0 {
			d.Calls[op] = v
		}
	}
	return d
}

// breakdown renders calls per request, largest first: "EVALSHA 1.00, HMGET 0.01".
func (c clientCalls) breakdown(requests int64) string {
	if requests <= 0 {
		return ""
	}
	ops := make([]string, 0, len(c.Calls))
	for op := range c.Calls {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if c.Calls[ops[i]] != c.Calls[ops[j]] {
			return c.Calls[ops[i]] > c.Calls[ops[j]]
		}
		return ops[i] < ops[j]
	})
	var parts []string
	for _, op := range ops {
		if per := c.Calls[op] / float64(requests); per >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", op, per))
		}
	}
	if per := c.Hits / float64(requests); per >= 0.005 {
		parts = append(parts, fmt.Sprintf("of which cache hits %.2f", per))
	}
	return strings.Join(parts, ", ")
}

// parseClientCalls reads the counters from Prometheus text; ok is false when no call metric
// is present.
func parseClientCalls(text string) (clientCalls, bool) {
	c := clientCalls{Calls: map[string]float64{}}
	found := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		name, labels, v, ok := promSample(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case metricCalls, metricNaiveRT:
			op := promLabel(labels, "operation")
			if op == "" {
				op = "(all)"
			}
			c.Calls[op] += v
			found = true
		case metricCacheHits, metricCacheHits + "_total":
			c.Hits += v
		}
	}
	return c, found
}

// promSample parses one sample line: name{labels} value [timestamp].
func promSample(line string) (name, labels string, v float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", "", 0, false
	}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", "", 0, false
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		end, inQuote := -1, false
		for j := 1; j < len(rest) && end < 0; j++ {
			switch c := rest[j]; {
			case c == '\\' && inQuote:
				j++
			case c == '"':
				inQuote = !inQuote
			case c == '}' && !inQuote:
				end = j
			}
		}
		if end < 0 {
			return "", "", 0, false
		}
		labels, rest = rest[1:end], rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", "", 0, false
	}
	return name, labels, v, true
}

// promLabel is one label's value from a label set (a="x",b="y"); escapes are kept as is.
func promLabel(labels, key string) string {
	for labels != "" {
		k, rest, ok := strings.Cut(labels, "=\"")
		if !ok {
			return ""
		}
		var val strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			val.WriteByte(rest[i])
		}
		if strings.TrimSpace(k) == key {
			return val.String()
		}
		labels = strings.TrimPrefix(rest[min(i+1, len(rest)):], ",")
	}
	return ""
}

// A key's pattern: <prefix>:v1:<type>:{…}[:rest], where a rest segment that looks like a
// word (items, history, byexp, mfa) is kept and anything else (ids, hashes) becomes *.
var wordSegment = regexp.MustCompile(`^[a-z][a-z_]{0,23}$`)

func keyPattern(key string) string {
	open := strings.IndexByte(key, '{')
	closing := strings.IndexByte(key, '}')
	if open < 0 || closing < open {
		return key
	}
	head, rest := key[:open], key[closing+1:]
	out := head + "{…}"
	if rest == "" {
		return out
	}
	for _, seg := range strings.Split(strings.TrimPrefix(rest, ":"), ":") {
		if wordSegment.MatchString(seg) {
			out += ":" + seg
		} else {
			out += ":*"
		}
	}
	return out
}

// keyGroup is what a SCAN found for one key pattern.
type keyGroup struct {
	Pattern string
	Type    string
	Count   int64
	Sample  []string
	Avg     float64
	Max     int64
}

// scanGroups walks every key matching match and measures up to sample keys per pattern.
func scanGroups(ctx context.Context, c rueidis.Client, match string, sample int) ([]*keyGroup, error) {
	groups := map[string]*keyGroup{}
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return nil, fmt.Errorf("SCAN: %w", err)
		}
		for _, k := range e.Elements {
			p := keyPattern(k)
			g := groups[p]
			if g == nil {
				g = &keyGroup{Pattern: p}
				groups[p] = g
			}
			g.Count++
			if len(g.Sample) < sample {
				g.Sample = append(g.Sample, k)
			}
		}
		cursor = e.Cursor
		if cursor == 0 {
			break
		}
	}
	out := make([]*keyGroup, 0, len(groups))
	for _, g := range groups {
		sizes, err := memoryUsage(ctx, c, g.Sample)
		if err != nil {
			return nil, err
		}
		var sum, n int64
		for _, s := range sizes {
			if s < 0 {
				continue
			}
			sum += s
			n++
			g.Max = max(g.Max, s)
		}
		if n > 0 {
			g.Avg = float64(sum) / float64(n)
		}
		if len(g.Sample) > 0 {
			g.Type, _ = c.Do(ctx, c.B().Type().Key(g.Sample[0]).Build()).ToString()
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern < out[j].Pattern })
	return out, nil
}

// memoryUsage is MEMORY USAGE ... SAMPLES 0 (every element) per key; -1 for a missing key.
func memoryUsage(ctx context.Context, c rueidis.Client, keys []string) ([]int64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	cmds := make(rueidis.Commands, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, c.B().MemoryUsage().Key(k).Samples(0).Build())
	}
	out := make([]int64, len(keys))
	for i, r := range c.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		switch {
		case rueidis.IsRedisNil(err):
			out[i] = -1
		case err != nil:
			return nil, fmt.Errorf("MEMORY USAGE: %w", err)
		default:
			out[i] = n
		}
	}
	return out, nil
}
