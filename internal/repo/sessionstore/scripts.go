package sessionstore

import (
	"embed"
	"io/fs"
	"testing/fstest"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// luaFiles are the session scripts, beside the Go that runs them.
//
//go:embed *.lua
var luaFiles embed.FS

// scriptFiles are luaFiles plus the snippet session_fields (SESSION_FIELDS and
// SESSION_TTL_FIELDS), written from sessPartFields: the per-user scripts include it, so the Go
// list and theirs are one.
var scriptFiles fs.FS = overlay{FS: luaFiles, extra: fstest.MapFS{
	"session_fields.lua": {Data: []byte(sessPartFieldsLua())},
}}

// script loads <name>.lua with its snippets put in (repo.LoadScript).
func script(name string) *rueidis.Lua { return repo.LoadScript(scriptFiles, name) }

// overlay serves the files of extra, and the others from FS.
type overlay struct {
	fs.FS
	extra fstest.MapFS
}

func (o overlay) Open(name string) (fs.File, error) {
	if _, ok := o.extra[name]; ok {
		return o.extra.Open(name)
	}
	return o.FS.Open(name)
}
