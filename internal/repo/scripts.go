package repo

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// Every transition is a small .lua file beside the Go that runs it, with a header comment
// naming its KEYS, ARGV and reply. Time inside scripts comes from redis.call('TIME'). A reply
// is an array whose first element is a status code (reply.go reads it).
//
// Code shared by several scripts (the fixed window, a field list) is written once as a
// snippet and put into each script that names it on a line of its own:
//
//	--#include fixed_window
//
// A snippet is looked up first among the store's own files (<name>.lua), then among the
// kit's (internal/repo/lua/<name>.lua). Snippets may include snippets; a snippet is put in
// once per script, where it is first named (two snippets may both include a third).

//go:embed lua/*.lua
var sharedLua embed.FS

// ownScripts are the kit's own scripts, beside the Go that runs them (writes.go, durable.go).
//
//go:embed *.lua
var ownScripts embed.FS

var (
	registryMu sync.Mutex
	registry   = map[string]string{} // script name → composed body, for ScriptBodies
)

var includeLine = regexp.MustCompile(`(?m)^--#include ([a-z0-9_]+)[ \t]*$`)

// LoadScript composes <name>.lua from files (its snippets put in) and returns it as a
// rueidis.Lua (EVALSHA with EVAL fallback), registered for ScriptBodies. Stores call it at
// package init; it panics on a missing file or snippet, which any test of the store catches.
func LoadScript(files fs.FS, name string) *rueidis.Lua {
	body, err := ComposeScript(files, name)
	if err != nil {
		panic(fmt.Sprintf("repo: script %s: %v", name, err))
	}
	registryMu.Lock()
	if prev, ok := registry[name]; ok && prev != body {
		registryMu.Unlock()
		panic(fmt.Sprintf("repo: two different scripts named %s", name))
	}
	registry[name] = body
	registryMu.Unlock()
	l := rueidis.NewLuaScript(body)
	rememberSHA(l, body)
	return l
}

// ComposeScript is the body LoadScript runs: <name>.lua with every --#include line replaced
// by its snippet.
func ComposeScript(files fs.FS, name string) (string, error) {
	return compose(files, name, nil, map[string]bool{})
}

// compose puts name's snippets in; seen is the include chain (cycles), done what is in already.
func compose(files fs.FS, name string, seen []string, done map[string]bool) (string, error) {
	for _, s := range seen {
		if s == name {
			return "", fmt.Errorf("include cycle %s", strings.Join(append(seen, name), " → "))
		}
	}
	b, err := fs.ReadFile(files, name+".lua")
	if err != nil && len(seen) > 0 {
		b, err = sharedLua.ReadFile("lua/" + name + ".lua")
	}
	if err != nil {
		return "", err
	}
	var firstErr error
	out := includeLine.ReplaceAllStringFunc(string(b), func(line string) string {
		snippet := includeLine.FindStringSubmatch(line)[1]
		if done[snippet] {
			return "-- (" + snippet + " is above)"
		}
		body, err := compose(files, snippet, append(seen, name), done)
		done[snippet] = true
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", name, err)
		}
		return strings.TrimRight(body, "\n")
	})
	return out, firstErr
}

// ScriptBodies returns every script the imported stores loaded, in name order, for
// store.LoadScripts at start.
func ScriptBodies() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		if strings.TrimSpace(registry[n]) != "" {
			out = append(out, registry[n])
		}
	}
	return out
}
