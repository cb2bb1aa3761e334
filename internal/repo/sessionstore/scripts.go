package sessionstore

import (
	"embed"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// scriptFiles are the session scripts and their snippets, beside the Go that runs them.
//
//go:embed *.lua
var scriptFiles embed.FS

// script loads <name>.lua with its snippets put in (repo.LoadScript).
func script(name string) *rueidis.Lua { return repo.LoadScript(scriptFiles, name) }
