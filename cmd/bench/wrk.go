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
	"text/template"
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

// wrkItem is one request shape; a script walks its items round-robin.
type wrkItem struct {
	Path   string
	Body   string // empty: no body
	Header string // optional per-item header name
	Value  string // its value
}

// wrkScript describes a generated wrk Lua script.
type wrkScript struct {
	Method  string
	Headers map[string]string // sent with every request
	Items   []wrkItem
	// Repeat sends each item this many times in a row (per thread) before moving on.
	Repeat int
	// CounterBody, when set, is a fmt template with two %d (thread id, request number)
	// that replaces the item body: unique values per request.
	CounterBody string
	// Tally counts responses by status in a response() callback (costs wrk CPU: only for
	// scenarios whose status mix matters).
	Tally bool
	// QuotePatch switches to the If-Match script: Items are quotes (Path = quote id,
	// Value = its ETag); each response's ETag is used on the next PATCH of that quote.
	QuotePatch bool
	// Sample, when set, replaces Items: a large token population in a compact form (the
	// scale scenarios: up to a million sessions, too many for one Lua table constructor).
	Sample *wrkSample
}

// wrkSample is a request Method Sample.Path with the header Header: Prefix+token. The token is
// Tokens[Seq[i]] walking Seq (a precomputed draw, e.g. Zipf; each thread takes every
// NTHREADS-th entry), or, with Seq empty, a uniform random draw from Tokens per request. Both
// travel as one long string each, split once per wrk thread.
type wrkSample struct {
	Path, Header, Prefix string
	Tokens               []string
	Seq                  []int32 // indexes into Tokens
	Seed                 int64   // math.randomseed base for the uniform draw
}

// first is the sample's first request (for the probe).
func (s *wrkSample) first() wrkItem {
	i := 0
	if len(s.Seq) > 0 {
		i = int(s.Seq[0])
	}
	return wrkItem{Path: s.Path, Header: s.Header, Value: s.Prefix + s.Tokens[i]}
}

// lua renders the sample's data (validated: the blob's delimiters cannot occur in it).
func (s *wrkSample) lua() (string, error) {
	if len(s.Tokens) == 0 {
		return "", errors.New("wrk sample: no tokens")
	}
	var b strings.Builder
	b.Grow(len(s.Tokens)*(len(s.Tokens[0])+1) + len(s.Seq)*7 + 256)
	fmt.Fprintf(&b, "SAMPLE_PATH = %s\nSAMPLE_HEADER = %s\nSAMPLE_PREFIX = %s\nSAMPLE_SEED = %d\nTOKEN_BLOB = [==[\n",
		luaString(s.Path), luaString(s.Header), luaString(s.Prefix), s.Seed)
	for _, t := range s.Tokens {
		if t == "" || strings.ContainsAny(t, "]\n\r") {
			return "", fmt.Errorf("wrk sample: token %q cannot travel in the blob", t)
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	b.WriteString("]==]\nSEQ_BLOB = [==[\n")
	for _, i := range s.Seq {
		if i < 0 || int(i) >= len(s.Tokens) {
			return "", fmt.Errorf("wrk sample: index %d outside %d tokens", i, len(s.Tokens))
		}
		b.WriteString(strconv.Itoa(int(i) + 1)) // Lua indexes from 1
		b.WriteByte(' ')
	}
	b.WriteString("]==]\n")
	return b.String(), nil
}

var luaTmpl = template.Must(template.New("lua").Funcs(template.FuncMap{"lua": luaString}).Parse(`-- generated by cmd/bench; do not edit
NTHREADS = {{.Threads}}
REPEAT = {{.Repeat}}
METHOD = {{lua .Method}}
HEADERS = {
{{- range $k, $v := .Headers}}
  [{{lua $k}}] = {{lua $v}},
{{- end}}
}
ITEMS = {
{{- range .Items}}
  { {{lua .Path}}, {{if .Body}}{{lua .Body}}{{else}}nil{{end}}, {{if .Header}}{{lua .Header}}{{else}}nil{{end}}, {{if .Value}}{{lua .Value}}{{else}}nil{{end}} },
{{- end}}
}
COUNTER_BODY = {{if .CounterBody}}{{lua .CounterBody}}{{else}}nil{{end}}
TALLY = {{.Tally}}
QUOTE_PATCH = {{.QuotePatch}}
SAMPLE = {{if .Sample}}true{{else}}false{{end}}
{{.SampleLua}}

local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function init(args)
  n = 0
  statuses = {}
  if SAMPLE then
    TOKENS, SEQ = {}, {}
    for t in string.gmatch(TOKEN_BLOB, "[^\n]+") do TOKENS[#TOKENS + 1] = t end
    for i in string.gmatch(SEQ_BLOB, "%d+") do SEQ[#SEQ + 1] = tonumber(i) end
    TOKEN_BLOB, SEQ_BLOB = nil, nil
    math.randomseed(SAMPLE_SEED + tid)
  end
  if QUOTE_PATCH then
    free, etag, mine = {}, {}, {}
    for idx, it in ipairs(ITEMS) do
      if (idx - 1) % NTHREADS == tid then
        table.insert(free, it[1]); table.insert(mine, it[1]); etag[it[1]] = it[4]
      end
    end
  end
end

local function headers()
  local h = {}
  for k, v in pairs(HEADERS) do h[k] = v end
  return h
end

if QUOTE_PATCH then
  function request()
    n = n + 1
    local id = table.remove(free, 1)
    if id == nil then id = mine[(n % #mine) + 1] end
    local h = headers()
    h["If-Match"] = etag[id]
    return wrk.format("PATCH", "/v1/quotes/" .. id, h, string.format('{"customerId":"cust-%d-%d"}', tid, n))
  end
  function response(status, hdrs, body)
    statuses[status] = (statuses[status] or 0) + 1
    local id = body and (string.match(body, '"quoteId":"(q_[0-9a-z]+)"') or string.match(body, '/v1/quotes/(q_[0-9a-z]+)'))
    if id == nil or etag[id] == nil then return end
    local tag = hdrs["Etag"] or hdrs["ETag"] or hdrs["etag"]
    if status == 200 and tag then etag[id] = tag end
    -- A quote whose ETag went stale (412) is retired: its current ETag is unknown.
    if status ~= 412 then table.insert(free, id) end
  end
elseif SAMPLE then
  function request()
    n = n + 1
    local tok
    if #SEQ > 0 then
      tok = TOKENS[SEQ[((n - 1) * NTHREADS + tid) % #SEQ + 1]]
    else
      tok = TOKENS[math.random(#TOKENS)]
    end
    local h = headers()
    h[SAMPLE_HEADER] = SAMPLE_PREFIX .. tok
    return wrk.format(METHOD, SAMPLE_PATH, h, nil)
  end
  if TALLY then
    function response(status, hdrs, body)
      statuses[status] = (statuses[status] or 0) + 1
    end
  end
else
  function request()
    n = n + 1
    local it = ITEMS[(math.floor((n - 1) / REPEAT) * NTHREADS + tid) % #ITEMS + 1]
    local h = headers()
    if it[3] then h[it[3]] = it[4] end
    local body = it[2]
    if COUNTER_BODY then body = string.format(COUNTER_BODY, tid, n) end
    return wrk.format(METHOD, it[1], h, body)
  end
  if TALLY then
    function response(status, hdrs, body)
      statuses[status] = (statuses[status] or 0) + 1
    end
  end
end

function done(summary, latency, requests)
  local st = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    if s then
      for k, v in pairs(s) do st[k] = (st[k] or 0) + v end
    end
  end
  local parts = {}
  for k, v in pairs(st) do table.insert(parts, string.format('"%d":%d', k, v)) end
  local e = summary.errors
  io.write(string.format('` + resultMarker + `{"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d,' ..
    '"p50_us":%.1f,"p99_us":%.1f,"p999_us":%.1f,"mean_us":%.1f,"max_us":%.1f,"statuses":{%s}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.mean, latency.max,
    table.concat(parts, ",")))
end
`))

// luaString quotes s as a Lua string literal.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// renderScript writes the Lua source for s with the given thread count.
func renderScript(s wrkScript, threads int) ([]byte, error) {
	var sample string
	if s.Sample != nil {
		var err error
		if sample, err = s.Sample.lua(); err != nil {
			return nil, err
		}
	} else if len(s.Items) == 0 {
		return nil, errors.New("wrk script: no items")
	}
	if s.Repeat < 1 {
		s.Repeat = 1
	}
	if s.Method == "" {
		s.Method = "GET"
	}
	var buf bytes.Buffer
	err := luaTmpl.Execute(&buf, struct {
		wrkScript
		Threads   int
		SampleLua string
	}{s, threads, sample})
	return buf.Bytes(), err
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
