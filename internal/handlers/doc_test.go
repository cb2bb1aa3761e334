package handlers

import (
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// go list and go doc show doc.go's package comment, not one the generator writes: no non-test
// file but doc.go carries a package comment (go list takes the first file's, alphabetically).
func TestPackageDocIsDocGo(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pkg.Doc, "Package handlers serves") {
		t.Errorf("go list shows %q", pkg.Doc)
	}
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && name != "doc.go" {
			t.Errorf("%s has a package comment: %q", name, f.Doc.Text())
		}
	}
}
