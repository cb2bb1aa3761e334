package repo

import (
	_ "embed"

	"github.com/redis/rueidis"
)

// timeLua reads Redis's clock; tests compare expiries with it. It lives in testdata so that
// ScriptBodies (what the gateway preloads at start) holds only real transitions.
//
//go:embed testdata/time.lua
var timeLua string

var timeScript = rueidis.NewLuaScript(timeLua)
