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
	s, tk := &Sessions{keys: k}, &Tokens{keys: k}
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
	}
	for _, tt := range tests {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
