package session

import "testing"

func TestParseID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"good", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB", true},
		{"underscores in tag", "s_A_A_A_A_A_A__BBBBBBBBBBBBBBBBBB", true},
		{"short", "s_AAAAAAAAAAAA_BBBB", false},
		{"wrong prefix", "t_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"brace", "s_AAAAAAAAAAA}_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"colon", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBB:", false},
		{"no separator", "s_AAAAAAAAAAAAXBBBBBBBBBBBBBBBBBBBBBB", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ref, ok := ParseID(tt.id)
			if ok != tt.ok || ok && ref.ID() != tt.id {
				t.Fatalf("ParseID(%q) = %+v, %v", tt.id, ref, ok)
			}
		})
	}
}
