package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// EnvFileVar names the env file the gateway and its CLI read (the --env-file flag wins).
const EnvFileVar = "GATEWAY_ENV_FILE"

// Setting is one variable as `gateway config` prints it: its value (secrets masked), its
// default and where the value came from.
type Setting struct {
	Name, Value, Default string
	Source               Source
}

// Settings lists every variable of c in declaration order, read from e.
func (c Config) Settings(e Env) []Setting {
	v := reflect.ValueOf(c)
	t := v.Type()
	out := make([]Setting, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("env")
		_, src := e.Get(name)
		s := Setting{Name: name, Value: maskField(f, fmt.Sprint(v.Field(i).Interface())), Default: f.Tag.Get("default"), Source: src}
		if name == "GATEWAY_ADDR" {
			s.Default += " (" + embeddedAddr + " without REDIS_URL)"
		}
		if file := f.Tag.Get("file"); file != "" && src == SourceDefault && s.Value != "" {
			_, fsrc := e.Get(file)
			s.Source = Source("file named by " + file + " (" + string(fsrc) + ")")
		}
		out = append(out, s)
	}
	return out
}

// Known reports whether name is a variable the gateway reads.
func Known(name string) bool {
	if name == EnvFileVar {
		return true
	}
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("env") == name {
			return true
		}
	}
	return false
}

// Unknown is a GATEWAY_* variable the gateway does not read, with the known name nearest to it.
type Unknown struct{ Name, Nearest string }

// UnknownNames are the GATEWAY_* names among names that no setting reads (sorted), each with
// the nearest known name by edit distance: a misspelt variable is otherwise silently ignored.
func UnknownNames(names []string) []Unknown {
	var known []string
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		known = append(known, t.Field(i).Tag.Get("env"))
	}
	known = append(known, EnvFileVar)
	var out []Unknown
	for _, n := range names {
		if !strings.HasPrefix(n, "GATEWAY_") || Known(n) {
			continue
		}
		best, bestD := "", -1
		for _, k := range known {
			if d := editDistance(n, k); bestD < 0 || d < bestD {
				best, bestD = k, d
			}
		}
		out = append(out, Unknown{Name: n, Nearest: best})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return slices.Compact(out)
}

// editDistance is the Levenshtein distance between a and b (ASCII names).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
