package repo_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/repo"
	_ "github.com/hashgate/hashgate/internal/repo/casestore"
	_ "github.com/hashgate/hashgate/internal/repo/idemstore"
	_ "github.com/hashgate/hashgate/internal/repo/quotestore"
	_ "github.com/hashgate/hashgate/internal/repo/sessionstore"
	_ "github.com/hashgate/hashgate/internal/repo/tokenstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

var includeLine = regexp.MustCompile(`(?m)^--#include `)

// What the gateway preloads (repo.ScriptBodies, once every store is imported) loads on every
// backend, and holds whole scripts only: every snippet put in, no test-only script.
func TestStoreScriptsLoadOnEveryBackend(t *testing.T) {
	t.Parallel()
	bodies := repo.ScriptBodies()
	if len(bodies) < 30 {
		t.Fatalf("%d scripts registered by the five stores: expected every one of them", len(bodies))
	}
	for _, b := range bodies {
		if includeLine.MatchString(b) || strings.Contains(b, "time.lua") {
			t.Errorf("a preloaded script is not whole (an include left) or is test-only:\n%.300s", b)
		}
	}
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, _ string) {
		if err := s.LoadScripts(context.Background(), bodies...); err != nil {
			t.Fatalf("load: %v", err)
		}
	})
}

// Every Lua script is a .lua file beside the Go that runs it (loaded with LoadScript or
// //go:embed): no Go file outside the tests holds Lua in a string literal, and none but
// scripts.go makes a script of a string (rueidis.NewLuaScript).
func TestNoLuaInlinedInGo(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && d.Name() != "..") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && strings.Contains(n.Value, "redis.call(") {
					t.Errorf("%s: Lua in a string literal: move it to a .lua file", fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "NewLuaScript" && filepath.Base(path) != "scripts.go" {
					t.Errorf("%s: rueidis.NewLuaScript: load a .lua file with repo.LoadScript", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
