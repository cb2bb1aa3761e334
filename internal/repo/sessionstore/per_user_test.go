package sessionstore

import (
	"slices"
	"testing"
)

// TestSessionHotReadNames: the hot read's names, cut from one string, are perUserHotNames' and the
// marker's.
func TestSessionHotReadNames(t *testing.T) {
	for _, part := range []string{"", "p", "0123456789abcdef0123456789abcdef"} {
		level, pending, idle, groups, mac, marker := perUserHotParts(part)
		if got, want := []string{fieldUserID, fieldTenantID, level, pending, idle, groups, mac}, perUserHotNames(part); !slices.Equal(got, want) {
			t.Errorf("perUserHotParts(%q) = %q, want %q", part, got, want)
		}
		if want := partField(part, fieldAbsoluteExpires); marker != want {
			t.Errorf("perUserHotParts(%q) marker = %q, want %q", part, marker, want)
		}
	}
}
