package sessionstore

import (
	"slices"
	"testing"
)

// TestSessionHotReadNames: the hot read's names, cut from one string, are perUserHotNames', the
// live marker last.
func TestSessionHotReadNames(t *testing.T) {
	for _, part := range []string{"", "p", "0123456789abcdef0123456789abcdef"} {
		level, pending, idle, groups, live := perUserHotParts(part)
		if got, want := []string{fieldUserID, fieldTenantID, level, pending, idle, groups, live}, perUserHotNames(part); !slices.Equal(got, want) {
			t.Errorf("perUserHotParts(%q) = %q, want %q", part, got, want)
		}
		if want := partField(part, fieldLive); live != want {
			t.Errorf("perUserHotParts(%q) marker = %q, want %q", part, live, want)
		}
	}
}
