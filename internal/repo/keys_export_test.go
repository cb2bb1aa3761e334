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
	s, c, tk := &Sessions{keys: k}, &Cases{keys: k}, &Tokens{keys: k}
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
		{"case", []string{CaseKeyPattern(k, "c_1"), CaseKeyPattern(k, "c_1") + ":history"}, c.caseKeys("*", "c_1")[:2]},
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
