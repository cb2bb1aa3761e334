package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/client"
)

// A login service logs a user in, telling a refusal (an RFC 9457 problem) from no answer at
// all; the user's app then asks who is logged in with the session token. This body is the
// README's Go example (TestReadmeGoExampleIsExampleReadme keeps the two equal).
func Example_readme() {
	ctx := context.Background()
	svc, err := client.NewClientWithResponses(baseURL, client.WithBearerToken(adminToken))
	if err != nil {
		log.Fatal(err)
	}
	login, err := client.Check(svc.CreateSessionWithResponse(ctx, client.SessionCreateRequest{
		UserId: "alice", AuthLevel: client.AuthLevelBASIC}))
	var p *client.Problem
	switch {
	case errors.As(err, &p): // the gateway refused: p.Type is a page saying what to do
		log.Fatalf("login refused: %d %s: %s (%s)", p.Status, p.Slug(), p.DetailText(), p.Type)
	case err != nil: // no answer: the gateway is unreachable, or the call timed out
		log.Fatalf("login: %v", err)
	}

	// The user's app calls with the session token, not the service's API token.
	app, err := client.NewClientWithResponses(baseURL, client.WithSessionToken(login.JSON201.Token))
	if err != nil {
		log.Fatal(err)
	}
	me, err := client.Check(app.GetCurrentSessionWithResponse(ctx))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("logged in:", me.JSON200.UserId, me.JSON200.AuthLevel)

	// The API token where a session token goes: refused, and the detail says where it goes.
	_, err = client.Check(svc.GetCurrentSessionWithResponse(ctx))
	if errors.As(err, &p) {
		fmt.Println(p.Status, p.Slug(), strings.Contains(p.DetailText(), "X-Session-Token"))
	}
	// Output:
	// logged in: alice BASIC
	// 401 unauthenticated true
}

// readmeMarker precedes, in README.md, the Go block that must equal Example_readme's body.
const readmeMarker = "<!-- client/example_readme_test.go: Example_readme -->"

// TestReadmeGoExampleIsExampleReadme: the README's Go example is Example_readme's body, which
// compiles and runs against a gateway (TestMain), so the README shows code that works.
func TestReadmeGoExampleIsExampleReadme(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(readme, []byte(readmeMarker+"\n```go\n"))
	if !ok {
		t.Fatalf("README.md has no Go block after %q", readmeMarker)
	}
	block, _, ok := bytes.Cut(after, []byte("\n```\n"))
	if !ok {
		t.Fatal("README.md: the Go block after the marker does not end")
	}
	want := exampleBody(t, "example_readme_test.go", "Example_readme")
	if got := string(block); got != want {
		t.Errorf("README.md's Go block is not Example_readme's body; put this in it:\n%s", want)
	}
}

// exampleBody is the body of function name in file, without its braces and one level of
// indentation.
func exampleBody(t *testing.T, file, name string) string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == name {
			body := string(src[fset.Position(fn.Body.Lbrace).Offset+2 : fset.Position(fn.Body.Rbrace).Offset-1])
			lines := strings.Split(body, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "\t")
			}
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("%s has no func %s", file, name)
	return ""
}
