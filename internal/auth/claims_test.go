package auth

import (
	"slices"
	"testing"
)

func TestClaimsScopes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scope  string
		want   []string
		has    string
		hasExp bool
	}{
		{"empty", "", nil, "sessions:read", false},
		{"single", "sessions:read", []string{"sessions:read"}, "sessions:read", true},
		{"many with extra spaces", "  quotes:read   cases:write ", []string{"quotes:read", "cases:write"}, "cases:write", true},
		{"prefix is not a match", "sessions:readx", []string{"sessions:readx"}, "sessions:read", false},
		{"empty query", "sessions:read", []string{"sessions:read"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Claims{Scope: tt.scope}
			if got := c.Scopes(); !slices.Equal(got, tt.want) {
				t.Errorf("Scopes() = %q, want %q", got, tt.want)
			}
			if got := c.HasScope(tt.has); got != tt.hasExp {
				t.Errorf("HasScope(%q) = %v, want %v", tt.has, got, tt.hasExp)
			}
		})
	}
}

func TestValidScope(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"sessions:read", "sessions:write", "tokens:read", "tokens:write",
		"quotes:read", "quotes:write", "cases:read", "cases:write", "tokens:admin",
	} {
		if !ValidScope(s) {
			t.Errorf("ValidScope(%q) = false", s)
		}
	}
	for _, s := range []string{"", "admin", "sessions:*", "Sessions:read", "sessions:read "} {
		if ValidScope(s) {
			t.Errorf("ValidScope(%q) = true", s)
		}
	}
	ks := KnownScopes()
	if len(ks) != 12 {
		t.Fatalf("KnownScopes() has %d entries, want 12", len(ks))
	}
	ks[0] = "mutated"
	if !ValidScope("sessions:read") {
		t.Error("KnownScopes() returned the internal slice")
	}
}
