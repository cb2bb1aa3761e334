// Package keyaudit checks a Redis keyspace against the declarations in docs/KEYS.md: every key
// matches a documented pattern, has a TTL, stays within its declared bounds, and holds no secret
// produced during the run. The CI step after the integration suite runs it (cmd/keyaudit).
package keyaudit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// Decl is one declared key pattern with its bounds.
type Decl struct {
	Pattern    string
	Type       string // hash, zset, stream, string, set, list
	MaxEntries int64  // fields, members or entries
	MaxBytes   int64  // payload bytes (field names + values, members, stream fields + values)
	re         *regexp.Regexp
}

// Violation is one finding.
type Violation struct {
	Key  string
	Rule string // no-ttl, undocumented, wrong-type, too-many-entries, too-many-bytes, secret, index
	Msg  string
}

func (v Violation) String() string { return fmt.Sprintf("%-16s %s: %s", v.Rule, v.Key, v.Msg) }

// ParseDecls reads the ```keyaudit fenced block of KEYS.md: one declaration a line,
// `pattern type maxEntries maxBytes`, '#' comments.
func ParseDecls(r io.Reader) ([]Decl, error) {
	var out []Decl
	sc := bufio.NewScanner(r)
	in := false
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```keyaudit":
			in = true
			continue
		case in && line == "```":
			in = false
			continue
		case !in || line == "" || strings.HasPrefix(line, "#"):
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("KEYS.md line %d: want `pattern type maxEntries maxBytes`", n)
		}
		me, err1 := strconv.ParseInt(f[2], 10, 64)
		mb, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || me <= 0 || mb <= 0 {
			return nil, fmt.Errorf("KEYS.md line %d: bounds must be positive integers", n)
		}
		d := Decl{Pattern: f[0], Type: f[1], MaxEntries: me, MaxBytes: mb}
		re, err := patternRegexp(d.Pattern)
		if err != nil {
			return nil, fmt.Errorf("KEYS.md line %d: %w", n, err)
		}
		d.re = re
		out = append(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("KEYS.md has no ```keyaudit block")
	}
	return out, nil
}

var placeholder = regexp.MustCompile(`<[^<>]+>`)

// patternRegexp turns `<prefix>:v1:token:{<tokenId>}:x` into an anchored regexp: a placeholder
// matches one segment (no ':' and no braces); everything else is literal.
func patternRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range placeholder.FindAllStringIndex(p, -1) {
		b.WriteString(regexp.QuoteMeta(p[last:loc[0]]))
		b.WriteString(`[^:{}]+`)
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(p[last:]))
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// Secrets are values produced during the run that must never be stored: Substrings (tokens,
// JWTs) may not appear anywhere; Exact values (short MFA codes) may not be a whole stored value.
type Secrets struct {
	Substrings []string
	Exact      map[string]bool
}

// ParseSecrets reads `kind value` lines: kind "code" (exact), any other ("token", "secret": a
// webhook signing secret) a substring check.
func ParseSecrets(r io.Reader) (Secrets, error) {
	s := Secrets{Exact: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		kind, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || val == "" {
			continue
		}
		switch kind {
		case "code":
			s.Exact[val] = true
		default:
			if len(val) >= 16 {
				s.Substrings = append(s.Substrings, val)
			}
		}
	}
	return s, sc.Err()
}

// Shapes of secrets the gateway produces, caught even when no secrets file was recorded.
var secretShapes = []*regexp.Regexp{
	regexp.MustCompile(`hgs_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{43}`),                        // session token
	regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{20,}`), // JWT
	regexp.MustCompile(`whsec_[A-Za-z0-9+/]{43}=`),                                       // webhook signing secret
}

// Auditor scans one Redis deployment.
type Auditor struct {
	Client  rueidis.Client
	Decls   []Decl
	Secrets Secrets
	// Match limits the scan (SCAN MATCH); default "*".
	Match string
}

// Report sums a scan.
type Report struct {
	Keys       int
	Violations []Violation
}

// Run scans every master and checks every key, then every list index family it met
// (CheckIndex, structure only: an expired object's entries wait for a prune).
func (a *Auditor) Run(ctx context.Context) (Report, error) {
	var rep Report
	fams := indexFamilies{}
	match := a.Match
	if match == "" {
		match = "*"
	}
	for addr, node := range a.Client.Nodes() {
		if role, err := node.Do(ctx, node.B().Role().Build()).ToArray(); err == nil && len(role) > 0 {
			if r, _ := role[0].ToString(); r != "master" {
				continue
			}
		}
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(match).Count(500).Build()).AsScanEntry()
			if err != nil {
				return rep, fmt.Errorf("scan %s: %w", addr, err)
			}
			for _, k := range e.Elements {
				rep.Keys++
				rep.Violations = append(rep.Violations, a.checkKey(ctx, node, k)...)
				fams.add(k)
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	rep.Violations = append(rep.Violations, fams.check(ctx, a.Client)...)
	return rep, nil
}

func (a *Auditor) checkKey(ctx context.Context, c rueidis.Client, key string) []Violation {
	var out []Violation
	add := func(rule, format string, args ...any) {
		out = append(out, Violation{Key: key, Rule: rule, Msg: fmt.Sprintf(format, args...)})
	}
	a.checkSecret(key, "the key name", add)
	ttl, err := c.Do(ctx, c.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return nil
		}
		add("error", "PTTL: %v", err)
		return out
	}
	if ttl == -2 { // expired meanwhile
		return nil
	}
	if ttl == -1 {
		add("no-ttl", "the key has no TTL")
	}
	typ, err := c.Do(ctx, c.B().Type().Key(key).Build()).ToString()
	if err != nil || typ == "none" {
		return out
	}
	var decl *Decl
	for i := range a.Decls {
		if a.Decls[i].re.MatchString(key) {
			decl = &a.Decls[i]
			break
		}
	}
	if decl == nil {
		add("undocumented", "no pattern in docs/KEYS.md matches (type %s)", typ)
	} else if decl.Type != typ {
		add("wrong-type", "documented as %s (%s), found %s", decl.Type, decl.Pattern, typ)
	}
	entries, values, err := a.payload(ctx, c, key, typ)
	if err != nil {
		add("error", "read %s: %v", typ, err)
		return out
	}
	var bytes int64
	for _, v := range values {
		bytes += int64(len(v))
		a.checkSecret(v, "a value", add)
		if a.Secrets.Exact[v] {
			add("secret", "a value equals a secret produced during the run")
		}
	}
	if typ == "hash" {
		out = append(out, a.checkEventFields(ctx, c, key, values)...)
		out = append(out, checkSessionFields(ctx, c, key, values)...)
	}
	if decl != nil {
		if entries > decl.MaxEntries {
			add("too-many-entries", "%d entries, declared at most %d (%s)", entries, decl.MaxEntries, decl.Pattern)
		}
		if bytes > decl.MaxBytes {
			add("too-many-bytes", "%d payload bytes, declared at most %d (%s)", bytes, decl.MaxBytes, decl.Pattern)
		}
	}
	return out
}

// Session events pending in a user's session hash (the per-user layout; docs/KEYS.md
// "Events"): fields ev.<n>, each with a field TTL, at most eventOutboxMax of them.
var eventField = regexp.MustCompile(`^ev\.[0-9]+$`)

// eventOutboxMax is repo.EventOutboxMax (the audit reads Redis, not the gateway's code).
const eventOutboxMax = 2000

// relayedKey is the relay's checkpoints hash of a tenant: every field (a user's checkpoint)
// has a field TTL.
var relayedKey = regexp.MustCompile(`:v1:events:\{[^}]*\}:relayed$`)

// checkEventFields checks the event fields among a hash's field names and values (alternating,
// as payload answers them): each has a field TTL (HPTTL), and there are at most eventOutboxMax;
// and each field of a relay's checkpoints hash has a field TTL.
func (a *Auditor) checkEventFields(ctx context.Context, c rueidis.Client, key string, values []string) []Violation {
	what := "session event field"
	all := relayedKey.MatchString(key)
	if all {
		what = "relay checkpoint field"
	}
	var names []string
	for i := 0; i+1 < len(values); i += 2 {
		if all || eventField.MatchString(values[i]) {
			names = append(names, values[i])
		}
	}
	var out []Violation
	if !all && len(names) > eventOutboxMax {
		out = append(out, Violation{Key: key, Rule: "too-many-entries", Msg: fmt.Sprintf("%d pending session events, declared at most %d", len(names), eventOutboxMax)})
	}
	bare, err := fieldsWithoutTTL(ctx, c, key, names)
	if err != nil {
		return append(out, Violation{Key: key, Rule: "error", Msg: fmt.Sprintf("HPTTL: %v", err)})
	}
	if len(bare) > 0 {
		out = append(out, Violation{Key: key, Rule: "no-ttl", Msg: fmt.Sprintf("%s %s has no field TTL", what, bare[0])})
	}
	return out
}

func (a *Auditor) checkSecret(s, where string, add func(rule, format string, args ...any)) {
	for _, sec := range a.Secrets.Substrings {
		if strings.Contains(s, sec) {
			add("secret", "%s contains a secret produced during the run", where)
			return
		}
	}
	for _, re := range secretShapes {
		if re.MatchString(s) {
			add("secret", "%s contains something shaped like a credential (%s)", where, re.String()[:8])
			return
		}
	}
}

// payload returns the entry count and every stored string (field names and values, members,
// stream fields and values) of key.
func (a *Auditor) payload(ctx context.Context, c rueidis.Client, key, typ string) (int64, []string, error) {
	switch typ {
	case "string":
		v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		return 1, []string{v}, err
	case "hash":
		m, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
		vals := make([]string, 0, 2*len(m))
		for k, v := range m {
			vals = append(vals, k, v)
		}
		return int64(len(m)), vals, err
	case "zset":
		v, err := c.Do(ctx, c.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
		return int64(len(v)), v, err
	case "set":
		v, err := c.Do(ctx, c.B().Smembers().Key(key).Build()).AsStrSlice()
		return int64(len(v)), v, err
	case "list":
		v, err := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
		return int64(len(v)), v, err
	case "stream":
		entries, err := c.Do(ctx, c.B().Xrange().Key(key).Start("-").End("+").Build()).AsXRange()
		var vals []string
		for _, e := range entries {
			for k, v := range e.FieldValues {
				vals = append(vals, k, v)
			}
		}
		return int64(len(entries)), vals, err
	}
	return 0, nil, fmt.Errorf("unsupported type %s", typ)
}
