package storetest

import (
	"context"
	"testing"

	"github.com/hashgate/hashgate/internal/keyaudit"
	"github.com/hashgate/hashgate/internal/store"
)

// IndexesMatchLive fails t unless the list index family of keys (the coordinates hash first,
// then the indexes: repo.Keys.IndexKeys) lists exactly the live objects, every member being
// the one its coordinates name (keyaudit.CheckIndex). Call it after a list or a create has
// pruned what expired.
func IndexesMatchLive(t *testing.T, s *store.Store, keys []string) {
	t.Helper()
	fam, _, ok := keyaudit.IndexFamilyOf(keys[0])
	if !ok {
		t.Fatalf("%s is not a list index key", keys[0])
	}
	fam.Indexes = keys[1:]
	vs, err := keyaudit.CheckIndex(context.Background(), s.Client, fam, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("index audit: %s", v)
	}
}
