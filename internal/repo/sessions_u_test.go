package repo

import (
	"io/fs"
	"strings"
	"testing"
)

// TestSessionFieldListsAgree: every script that embeds the per-user layout's field lists holds
// exactly the Go lists (sessPartFieldsLua), and every per-user script that names a list embeds it.
func TestSessionFieldListsAgree(t *testing.T) {
	want := sessPartFieldsLua()
	names, err := fs.Glob(scriptFS, "scripts/session_*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(scriptFS, name)
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		_, rest, found := strings.Cut(body, "-- BEGIN session_fields\n")
		uses := strings.Contains(body, "SESSION_FIELDS") || strings.Contains(body, "SESSION_TTL_FIELDS")
		switch {
		case !found && uses:
			t.Errorf("%s names SESSION_FIELDS without the BEGIN/END session_fields block", name)
		case found:
			got, _, ok := strings.Cut(rest, "-- END session_fields\n")
			if !ok {
				t.Errorf("%s: no END session_fields line", name)
			} else if got != want {
				t.Errorf("%s: field lists drifted:\n got %q\nwant %q", name, got, want)
			}
		}
	}
}
