package apperr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestIsAndAs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		kind   *Kind
		detail string
	}{
		{"error", New(NotFound, "quote q_1"), NotFound, "quote q_1"},
		{"wrapped error", fmt.Errorf("get: %w", Newf(Conflict, "status %s", "SUBMITTED")), Conflict, "status SUBMITTED"},
		{"bare kind", fmt.Errorf("token x: %w", NotFound), NotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !errors.Is(tt.err, tt.kind) {
				t.Fatalf("errors.Is(%v, %v) = false", tt.err, tt.kind)
			}
			if errors.Is(tt.err, Internal) {
				t.Fatalf("errors.Is(%v, Internal) = true", tt.err)
			}
			got, ok := As(tt.err)
			if !ok || got.Kind != tt.kind || got.Detail != tt.detail {
				t.Fatalf("As = %+v, %v", got, ok)
			}
		})
	}
	if _, ok := As(errors.New("boom")); ok {
		t.Fatal("As(plain error) = true")
	}
}

func TestSlugsUnique(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Slug] {
			t.Fatalf("duplicate slug %q", k.Slug)
		}
		seen[k.Slug] = true
		if k.Status < 400 || k.Status > 599 || k.Title == "" || !regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`).MatchString(k.Slug) {
			t.Fatalf("bad kind %+v", k)
		}
		if got, ok := Lookup(k.Slug); !ok || got != k {
			t.Fatalf("Lookup(%q) = %v, %v", k.Slug, got, ok)
		}
	}
	if len(seen) < 31 {
		t.Fatalf("the table has %d kinds: not the table", len(seen))
	}
}

func TestTypeURIs(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"":                            "/problems/not-found",
		"https://api.example.com":     "https://api.example.com/problems/not-found",
		"https://api.example.com/hg/": "https://api.example.com/hg/problems/not-found",
	} {
		if got := NotFound.Type(base); got != want {
			t.Errorf("Type(%q) = %q, want %q", base, got, want)
		}
	}
	if got := Blank(418).Type("https://x"); got != "about:blank" || Blank(418).Title != "I'm a teapot" {
		t.Errorf("Blank(418) = %q %q", got, Blank(418).Title)
	}
}

// TestEveryProblemTypeHasAPage: every kind of the table has a page (when it happens, what to
// do), every page belongs to a kind of the table, and no problem type is made anywhere else:
// no Go file of the module builds a Kind of its own, and every /problems/<slug> the spec and
// the docs mention is a kind of the table.
func TestEveryProblemTypeHasAPage(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		p, ok := PageOf(k)
		if !ok {
			t.Errorf("problem type %q has no page: add it to pages.go", k.Slug)
			continue
		}
		if len(p.When) < 40 || len(p.Do) < 20 {
			t.Errorf("problem type %q: its page says too little: %+v", k.Slug, p)
		}
	}
	if len(pages) != len(Kinds()) {
		t.Errorf("%d pages for %d kinds: a page without a kind of the table", len(pages), len(Kinds()))
	}

	root := filepath.Join("..", "..")
	adHoc := regexp.MustCompile(`apperr\.Kind\{`)
	mention := regexp.MustCompile(`/problems/([a-z0-9-]+)`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == ".cache" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".go" && ext != ".yaml" && ext != ".md" && ext != ".json" && ext != ".conf" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil // tests ask for unknown types on purpose
		}
		if ext == ".go" && adHoc.Match(b) {
			t.Errorf("%s builds a problem Kind outside the table (use apperr's table or apperr.Blank)", path)
		}
		for _, m := range mention.FindAllSubmatch(b, -1) {
			if slug := string(m[1]); slug != "" {
				if _, ok := Lookup(slug); !ok {
					t.Errorf("%s mentions the problem type %q, which the table does not have", path, slug)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
