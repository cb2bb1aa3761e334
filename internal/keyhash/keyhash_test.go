package keyhash

import (
	"bytes"
	"strings"
	"testing"
)

func TestTagAndSum(t *testing.T) {
	t.Parallel()
	h, err := New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	a := h.Tag("user", 9, "tenant", "alice")
	if len(a) != 12 || strings.ContainsAny(a, "{}:") {
		t.Fatalf("tag %q", a)
	}
	if a != h.Tag("user", 9, "tenant", "alice") {
		t.Fatal("tag not deterministic")
	}
	if a == h.Tag("user", 9, "tenan", "talice") || a == h.Tag("other", 9, "tenant", "alice") {
		t.Fatal("tag ignores boundaries or purpose")
	}
	h2, _ := New(bytes.Repeat([]byte{8}, 32))
	if a == h2.Tag("user", 9, "tenant", "alice") {
		t.Fatal("tag ignores the key")
	}
	if !Equal(h.Sum("p", "x"), h.Sum("p", "x")) || Equal(h.Sum("p", "x"), h.Sum("p", "y")) {
		t.Fatal("Equal")
	}
	if _, err := New(make([]byte, 31)); err != ErrShortKey {
		t.Fatalf("short key: %v", err)
	}
	if _, err := Parse("not base64 !!"); err == nil {
		t.Fatal("parse accepted garbage")
	}
	if _, k, err := Generate(); err != nil || len(k) < 40 {
		t.Fatalf("generate: %v", err)
	}
}
