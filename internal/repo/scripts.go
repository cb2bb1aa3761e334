package repo

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/redis/rueidis"
)

// Every transition is a small .lua file here with a header comment naming its KEYS, ARGV and
// reply. Time inside scripts comes from redis.call('TIME'). A reply is an array whose first
// element is a status code (reply.go, which also reads it).
//
//go:embed scripts/*.lua
var scriptFS embed.FS

// script loads scripts/<name>.lua as a rueidis.Lua (EVALSHA with EVAL fallback). It panics at
// package init on a missing file, which the tests catch at once.
func script(name string) *rueidis.Lua {
	b, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("repo: missing script %s: %v", name, err))
	}
	l := rueidis.NewLuaScript(string(b))
	sum := sha1.Sum(b)
	luaSHA[l] = hex.EncodeToString(sum[:])
	return l
}

// luaSHA is each script's SHA-1, for an EVALSHA sent in a pipeline with other commands
// (rueidis.Lua sends its own alone). Filled at package init, read-only after.
var luaSHA = map[*rueidis.Lua]string{}

// ScriptBodies returns every embedded script, for store.LoadScripts at start.
func ScriptBodies() []string {
	var out []string
	names, _ := fs.Glob(scriptFS, "scripts/*.lua")
	sort.Strings(names)
	for _, n := range names {
		b, err := scriptFS.ReadFile(n)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			out = append(out, string(b))
		}
	}
	return out
}
