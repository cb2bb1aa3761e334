package sessionstore

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestSessionFieldListsAgree: every script that embeds the per-user layout's field lists holds
// exactly the Go lists (sessPartFieldsLua), and every per-user script that names a list embeds it.
func TestSessionFieldListsAgree(t *testing.T) {
	want := sessPartFieldsLua()
	names, err := fs.Glob(scriptFiles, "session_*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(scriptFiles, name)
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

// TestSessionHotReadNames: the hot read's names, cut from one string, are uHotNames' and the
// marker's.
func TestSessionHotReadNames(t *testing.T) {
	for _, part := range []string{"", "p", "0123456789abcdef0123456789abcdef"} {
		level, pending, idle, groups, marker := uHotParts(part)
		if got, want := []string{sfUserID, sfTenantID, level, pending, idle, groups}, uHotNames(part); !slices.Equal(got, want) {
			t.Errorf("uHotParts(%q) = %q, want %q", part, got, want)
		}
		if want := partField(part, sfAbsoluteExpires); marker != want {
			t.Errorf("uHotParts(%q) marker = %q, want %q", part, marker, want)
		}
	}
}
