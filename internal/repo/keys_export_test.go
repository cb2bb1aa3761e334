package repo

import (
	"slices"
	"testing"
)

// The key helpers exported for tools name the keys the repositories write.
func TestExportedKeysMatchRepositories(t *testing.T) {
	t.Parallel()
	k := Keys{Prefix: "hg"}
	q, c, tk := &Quotes{keys: k}, &Cases{keys: k}, &Tokens{keys: k}
	tests := []struct {
		name      string
		got, want []string
	}{
		{"token", []string{TokenKeyPattern(k, "01jd")}, []string{tk.hashKey("*", "01jd")}},
		{"quote", []string{QuoteKeyPattern(k, "q_1"), QuoteKeyPattern(k, "q_1") + ":items"}, q.quoteKeys("*", "q_1")[:2]},
		{"case", []string{CaseKeyPattern(k, "c_1"), CaseKeyPattern(k, "c_1") + ":history"}, c.caseKeys("*", "c_1")[:2]},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
