package tokens_test

import (
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/tokens"
)

func TestValidID(t *testing.T) {
	t.Parallel()
	for i := range 100 {
		if id := auth.NewTokenID(time.Now().Add(time.Duration(i) * time.Hour)); !tokens.ValidID(id) {
			t.Fatalf("NewTokenID %q rejected", id)
		}
	}
	for _, bad := range []string{"", "01hzzzzzzzzzzzzzzzzzzzzzz", "01hzzzzzzzzzzzzzzzzzzzzzzzz", "01HZZZZZZZZZZZZZZZZZZZZZZZ",
		"01hzzzzzzzzzzzzzzzzzzzzzzi", "01hzzzzzzzzzzzzzzzzzzzzz{}", "01hzzzzzzzzzzzzzzzzzzzzz:x"} {
		if tokens.ValidID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
