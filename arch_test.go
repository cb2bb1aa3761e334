package hashgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The layers, as docs/ARCHITECTURE.md draws them, kept by a test (`make test` runs it like any
// other): the HTTP layer (internal/handlers) calls services; services (one package per domain)
// own their model and the small store interface they need; a store package per domain under
// internal/repo (sessionstore, tokenstore, ...) implements it over Redis with the shared kit
// (internal/repo itself), and stores never import each other. Only the packages that talk to Redis import rueidis.
//
// A rule names the packages it applies to and the import paths they must not import; a path
// or pattern ends in "/..." to include its sub-packages. A rule with deps set checks every
// package the non-test code reaches (go list's Deps), not only what it imports itself: a
// service must not reach rueidis through a package it shares with the Redis side. Test files
// (_test.go) are checked only by rules with tests set: a test may wrap a rueidis client to
// inject faults anywhere, and the handler tests still build repositories until the
// composition root builds them.

// module is this module's path; rules name packages relative to it.
const module = "github.com/hashgate/hashgate"

type importRule struct {
	name   string
	pkgs   []string // packages the rule applies to (relative to module; "..." is every package)
	except []string // packages it does not apply to
	forbid []string // import paths they must not import (full paths; "/..." for sub-packages)
	tests  bool     // also check the imports of the packages' test files
	deps   bool     // check everything the packages' non-test code depends on, not only what it imports
}

// rueidisUsers talk to Redis: the store (connections, capabilities), the repositories, the
// request-rate limiter (ratelimit/ratesync), the traced client (telemetry/redistrace), the
// test servers and recorder, and two tools that read Redis directly: the keyspace audit
// (cmd/keyaudit, internal/keyaudit) and the load benchmark (cmd/bench, whose baselines are
// plain rueidis clients).
var rueidisUsers = []string{"internal/store/...", "internal/repo/...", "internal/ratelimit/ratesync", "internal/telemetry/redistrace",
	"internal/testredis/...", "internal/keyaudit/...", "cmd/keyaudit", "cmd/bench"}

// services are the domain packages, one per domain.
var services = []string{"internal/tokens/...", "internal/sessions/...", "internal/quotes/...", "internal/cases/...",
	"internal/idempotency/...", "internal/events/...", "internal/webhooks/..."}

// models are the domain models kept apart from their service where a model in the service
// package would make an import cycle: internal/auth's principal carries the session's view.
var models = []string{"internal/sessions/session"}

var importRules = []importRule{
	{name: "rueidis only where Redis is talked to", pkgs: []string{"..."}, except: rueidisUsers,
		forbid: []string{"github.com/redis/rueidis/..."}},
	{name: "handlers call services, never repositories", pkgs: []string{"internal/handlers/..."},
		forbid: []string{module + "/internal/repo/..."}},
	{name: "models are values: they import nothing of the project's and no I/O", pkgs: models,
		forbid: []string{module + "/...", "github.com/redis/rueidis/...", "net/...", "github.com/labstack/echo/..."}},
	{name: "services own their store interface: they import no store and no Redis client", pkgs: services,
		forbid: []string{module + "/internal/repo/...", "github.com/redis/rueidis/..."}},
	{name: "no service depends on rueidis, even through the packages it imports", pkgs: services, deps: true,
		forbid: []string{"github.com/redis/rueidis/..."}},
	{name: "the store kit imports no store and no service", pkgs: []string{"internal/repo"},
		forbid: append([]string{module + "/internal/repo/..."}, modulePaths(services)...)},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/sessionstore/..."}, forbid: otherStores("sessionstore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/tokenstore/..."}, forbid: otherStores("tokenstore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/quotestore/..."}, forbid: otherStores("quotestore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/casestore/..."}, forbid: otherStores("casestore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/idemstore/..."}, forbid: otherStores("idemstore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/eventstore/..."}, forbid: otherStores("eventstore")},
	{name: "a store imports no other store", pkgs: []string{"internal/repo/webhookstore/..."}, forbid: otherStores("webhookstore")},
	{name: "services know nothing of HTTP", pkgs: services, tests: true,
		forbid: []string{module + "/internal/handlers/...", "github.com/labstack/echo/..."}},
	// The Go client is for the gateway's callers: generated from the spec, it needs nothing of
	// the gateway's code (its tests start a gateway, so they may).
	{name: "the public client imports nothing of the gateway", pkgs: []string{"client/..."},
		forbid: []string{module + "/internal/...", module + "/cmd/...", module + "/api", "github.com/labstack/echo/..."}},
}

// stores are the store packages under the kit (internal/repo), one per domain.
var stores = []string{"sessionstore", "tokenstore", "quotestore", "casestore", "idemstore", "eventstore", "webhookstore"}

// otherStores are the import paths of every store but self.
func otherStores(self string) []string {
	var out []string
	for _, s := range stores {
		if s != self {
			out = append(out, module+"/internal/repo/"+s+"/...")
		}
	}
	return out
}

// modulePaths turns package patterns relative to the module into full import paths.
func modulePaths(pkgs []string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = module + "/" + p
	}
	return out
}

// importException is one known edge that breaks a rule today, with the reason it is still
// there. The check fails when a listed edge no longer exists, so the list only shrinks.
type importException struct{ pkg, imp, why string }

var importExceptions = []importException{
	// None today: every store left internal/repo (issue 23). A new one needs its reason here.
}

// listedPackage is what go list tells about one package.
type listedPackage struct {
	ImportPath   string
	Imports      []string
	Deps         []string // every package the non-test code depends on, transitively
	TestImports  []string
	XTestImports []string
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := goList(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: the check would prove nothing", len(pkgs))
	}
	for _, v := range checkImports(pkgs, importRules, importExceptions) {
		t.Error(v)
	}
}

// The check catches a forbidden import, in a test file where the rule says so, a service that
// reaches rueidis through a package it imports, allows what a rule exempts, and reports an
// exception that is no longer needed.
func TestImportRulesCatchViolations(t *testing.T) {
	t.Parallel()
	pkgs := []listedPackage{
		{ImportPath: module + "/internal/handlers", Imports: []string{module + "/internal/repo", "github.com/redis/rueidis"}},
		{ImportPath: module + "/internal/handlers/plumbing", Imports: []string{module + "/internal/repo/sessions"}},
		{ImportPath: module + "/internal/quotes", TestImports: []string{"github.com/labstack/echo/v4"}},
		{ImportPath: module + "/internal/cases", TestImports: []string{"github.com/redis/rueidis/mock"}},
		{ImportPath: module + "/internal/tokens", Imports: []string{module + "/internal/apperr", module + "/internal/store"},
			Deps: []string{module + "/internal/apperr", module + "/internal/store", "github.com/redis/rueidis", "github.com/redis/rueidis/internal/cmds"}},
		{ImportPath: module + "/internal/store", Imports: []string{"github.com/redis/rueidis"},
			Deps: []string{"github.com/redis/rueidis", "github.com/redis/rueidis/internal/cmds"}},
		{ImportPath: module + "/internal/idempotency", Imports: []string{module + "/internal/store/storeerr"},
			Deps: []string{module + "/internal/store/storeerr"}},
		{ImportPath: module + "/internal/repo/tokens", Imports: []string{"github.com/redis/rueidis"}},
		{ImportPath: module + "/cmd/gateway", Imports: []string{"github.com/redis/rueidisx"}},
		{ImportPath: module + "/client", Imports: []string{module + "/internal/auth", module + "/api"},
			XTestImports: []string{module + "/internal/app"}},
	}
	exceptions := []importException{{"cmd/gateway", "github.com/redis/rueidis", "gone"}}
	got := checkImports(pkgs, importRules, exceptions)
	want := []string{
		`internal/handlers imports github.com/redis/rueidis: breaks "rueidis only where Redis is talked to"`,
		`internal/handlers imports github.com/hashgate/hashgate/internal/repo: breaks "handlers call services, never repositories"`,
		`internal/handlers/plumbing imports github.com/hashgate/hashgate/internal/repo/sessions: breaks "handlers call services, never repositories"`,
		`internal/quotes (tests) imports github.com/labstack/echo/v4: breaks "services know nothing of HTTP"`,
		`internal/tokens depends on github.com/redis/rueidis (through internal/store): breaks "no service depends on rueidis, even through the packages it imports"`,
		`client imports github.com/hashgate/hashgate/internal/auth: breaks "the public client imports nothing of the gateway"`,
		`client imports github.com/hashgate/hashgate/api: breaks "the public client imports nothing of the gateway"`,
		`exception cmd/gateway → github.com/redis/rueidis is no longer needed: remove it from importExceptions`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkImports returns one line per import that breaks a rule and is not an exception, then
// one per exception that matched nothing.
func checkImports(pkgs []listedPackage, rules []importRule, exceptions []importException) []string {
	var out []string
	used := make([]bool, len(exceptions))
	byPath := make(map[string]listedPackage, len(pkgs))
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !matchAny(rel, r.pkgs) || matchAny(rel, r.except) {
				continue
			}
			if r.deps {
				out = append(out, checkDeps(rel, p, byPath, r)...)
				continue
			}
			lists := [][]string{p.Imports}
			if r.tests {
				lists = append(lists, p.TestImports, p.XTestImports)
			}
			for i, imps := range lists {
				for _, imp := range imps {
					if !matchAny(imp, r.forbid) {
						continue
					}
					if j := slices.IndexFunc(exceptions, func(e importException) bool { return e.pkg == rel && e.imp == imp }); j >= 0 && i == 0 {
						used[j] = true
						continue
					}
					where := rel
					if i > 0 {
						where += " (tests)"
					}
					out = append(out, fmt.Sprintf("%s imports %s: breaks %q", where, imp, r.name))
				}
			}
		}
	}
	for i, e := range exceptions {
		if !used[i] {
			out = append(out, fmt.Sprintf("exception %s → %s is no longer needed: remove it from importExceptions", e.pkg, e.imp))
		}
	}
	return out
}

// checkDeps returns one line per forbidden pattern that p's non-test code reaches, naming the
// first such package and the imports of p that lead to it.
func checkDeps(rel string, p listedPackage, byPath map[string]listedPackage, r importRule) []string {
	var out []string
	for _, f := range r.forbid {
		i := slices.IndexFunc(p.Deps, func(d string) bool { return matchAny(d, []string{f}) })
		if i < 0 {
			continue
		}
		dep := p.Deps[i]
		var through []string
		for _, imp := range p.Imports {
			if imp == dep || slices.Contains(byPath[imp].Deps, dep) {
				through = append(through, strings.TrimPrefix(imp, module+"/"))
			}
		}
		out = append(out, fmt.Sprintf("%s depends on %s (through %s): breaks %q", rel, dep, strings.Join(through, ", "), r.name))
	}
	return out
}

// relative is path relative to the module ("." for its root), and whether it is in the module.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// matchAny reports whether path matches one of patterns: "..." matches everything, "x/..."
// matches x and everything under it, anything else only itself.
func matchAny(path string, patterns []string) bool {
	for _, p := range patterns {
		if p == "..." || p == path {
			return true
		}
		if base, ok := strings.CutSuffix(p, "/..."); ok && (path == base || strings.HasPrefix(path, base+"/")) {
			return true
		}
	}
	return false
}

// goList runs `go list -json ./...` in the module root (this test's directory).
func goList(t *testing.T) []listedPackage {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Imports,Deps,TestImports,XTestImports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var out []listedPackage
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		out = append(out, p)
	}
	return out
}
