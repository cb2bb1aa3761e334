package repo

import (
	"context"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func TestKeysCarryHashTag(t *testing.T) {
	t.Parallel()
	got := Keys{Prefix: "hg"}.Key("session", "abc", "s1")
	if got != "hg:v1:session:{abc}:s1" {
		t.Fatalf("key = %q", got)
	}
}

// The tests' clock script runs on every backend (the stores' scripts: scripts_test.go).
func TestTimeScriptRunsOnEveryBackend(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, _ string) {
		n, err := timeScript.Exec(context.Background(), s.Client, nil, nil).AsInt64()
		if err != nil || n < 1_700_000_000_000 {
			t.Fatalf("time.lua = %d, %v", n, err)
		}
	})
}

func TestFieldsClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    map[string]string
		want Outcome
	}{
		{"current", map[string]string{"schemaVersion": "2", "a": "x"}, Found},
		{"previous", map[string]string{"schemaVersion": "1", "a": "x"}, OldSchema},
		{"future", map[string]string{"schemaVersion": "9", "a": "x"}, Corrupt},
		{"missing a", map[string]string{"schemaVersion": "2"}, Corrupt},
		{"bad version", map[string]string{"schemaVersion": "two", "a": "x"}, Corrupt},
	}
	for _, tt := range tests {
		f := NewFields(tt.m)
		_ = f.Str("a")
		if got := f.Schema(); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		if (tt.want == Corrupt) != (f.Err("x") != nil) {
			t.Errorf("%s: err = %v", tt.name, f.Err("x"))
		}
	}
}

// A field the store's own rules refuse makes the hash corrupt like a missing one, and is
// named (only its name) with the others.
func TestFieldsBadIsCorrupt(t *testing.T) {
	t.Parallel()
	f := NewFields(map[string]string{"schemaVersion": "2", "flag": "maybe"})
	if f.Opt("flag") != "0" && f.Opt("flag") != "1" {
		f.Bad("flag")
	}
	_ = f.Str("missing")
	if got := f.Schema(); got != Corrupt {
		t.Fatalf("schema = %s, want corrupt", got)
	}
	if got := f.BadNames(); len(got) != 2 || got[0] != "flag" || got[1] != "missing" {
		t.Fatalf("bad = %v, want [flag missing]", got)
	}
	if err := f.Err("x"); err == nil || strings.Contains(err.Error(), "maybe") {
		t.Fatalf("err = %v: want a corrupt error naming fields, never values", err)
	}
}
