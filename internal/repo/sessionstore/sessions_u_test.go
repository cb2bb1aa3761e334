package sessionstore

import (
	"slices"
	"testing"
)

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
