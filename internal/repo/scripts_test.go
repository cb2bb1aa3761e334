package repo_test

import (
	"context"
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
