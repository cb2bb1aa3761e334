package repo

import (
	"slices"
	"testing"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// The key helpers exported for tools name the keys the repositories write.
func TestExportedKeysMatchRepositories(t *testing.T) {
	t.Parallel()
	k := Keys{Prefix: "hg"}
	s, q, c, tk := &Sessions{keys: k}, &Quotes{keys: k}, &Cases{keys: k}, &Tokens{keys: k}
	ref, ok := session.ParseID("s_HqmZlnfwLA7o_v5j5-VhIs4FOwPkjw6")
	if !ok {
		t.Fatal("ParseSessionID refused a valid id")
	}
	tests := []struct {
		name      string
		got, want []string
	}{
		{"session", []string{SessionKey(k, ref)}, []string{s.sessionKey(ref)}},
		{"device index", []string{SessionDevicesKey(k, ref.Tag)}, []string{s.devicesKey(ref.Tag)}},
		{"token", []string{TokenKeyPattern(k, "01jd")}, []string{tk.hashKey("*", "01jd")}},
		{"quote", QuoteKeys(k, "q_1"), []string{q.summaryKey("q_1"), q.itemsKey("q_1")}},
		{"case", CaseKeys(k, "c_1"), []string{c.hashKey("c_1"), c.historyKey("c_1")}},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
