package keyhash

import (
	"bytes"
	"strconv"
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

func TestTagEqual(t *testing.T) {
	t.Parallel()
	h, err := New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	tag := h.Tag("user", 9, "tenant", "alice")
	if !h.TagEqual(tag, "user", 9, "tenant", "alice") {
		t.Fatal("TagEqual refused the tag Tag made")
	}
	for _, c := range []struct{ tag, purpose, a, b string }{
		{tag, "user", "tenant", "bob"},
		{tag, "other", "tenant", "alice"},
		{tag, "user", "tenan", "talice"},
		{tag[:11], "user", "tenant", "alice"},
		{tag + "A", "user", "tenant", "alice"},
		{"", "user", "tenant", "alice"},
	} {
		if h.TagEqual(c.tag, c.purpose, 9, c.a, c.b) {
			t.Errorf("TagEqual(%q, %q, %q, %q) = true", c.tag, c.purpose, c.a, c.b)
		}
	}
	// A whole-sum tag matches Sum's encoding.
	if full := h.Tag("p", 32, "x"); len(full) != 43 || !h.TagEqual(full, "p", 32, "x") {
		t.Fatalf("full tag %q", full)
	}
}

// BenchmarkTagEqual is the session hot path's owner check: 0 allocs/op.
func BenchmarkTagEqual(b *testing.B) {
	h, err := New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		b.Fatal(err)
	}
	tag := h.Tag("user", 9, "tenant", "alice")
	b.ReportAllocs()
	for b.Loop() {
		if !h.TagEqual(tag, "user", 9, "tenant", "alice") {
			b.Fatal("mismatch")
		}
	}
}

// TestTenantTag: the one tenant-tag helper keeps the tag every stored key already carries
// (Tag("tenant", 9, tenant)), memoized and bounded.
func TestTenantTag(t *testing.T) {
	t.Parallel()
	h, err := New(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxTenantTags + 10 {
		tenant := "tenant-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i)
		want := h.Tag("tenant", 9, tenant)
		if got := h.TenantTag(tenant); got != want || len(got) != 12 {
			t.Fatalf("TenantTag(%q) = %q, want %q", tenant, got, want)
		}
		if got := h.TenantTag(tenant); got != want { // memoized or not, the same
			t.Fatalf("second TenantTag(%q) = %q, want %q", tenant, got, want)
		}
	}
	if n := h.nTenantTags.Load(); n != maxTenantTags {
		t.Fatalf("memoized %d tenant tags, want the bound %d", n, maxTenantTags)
	}
}

// AppendTag appends exactly Tag's characters, keeping what dst held (its allocations:
// BenchmarkAuthenticateHit in internal/sessions).
func TestAppendTagIsTag(t *testing.T) {
	h, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{9, 16, 32} {
		got := string(h.AppendTag([]byte("s_prefix_"), "session-verifier", n, "tag", "selector", "verifier"))
		if want := "s_prefix_" + h.Tag("session-verifier", n, "tag", "selector", "verifier"); got != want {
			t.Fatalf("AppendTag(%d) = %q, want %q", n, got, want)
		}
	}
}
