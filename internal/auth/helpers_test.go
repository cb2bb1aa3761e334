package auth

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"
)

const (
	testIssuer   = "https://gw.example"
	testAudience = "hashgate-api"
)

// t0 is the fixed "now" of most tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// seed returns a deterministic 32-byte seed filled with b.
func seed(b byte) []byte { return bytes.Repeat([]byte{b}, ed25519.SeedSize) }

func seedB64(b byte) string { return base64.RawURLEncoding.EncodeToString(seed(b)) }

func mustKeys(t testing.TB, spec string) *KeySet {
	t.Helper()
	ks, err := ParseKeys(spec)
	if err != nil {
		t.Fatalf("ParseKeys: %v", err)
	}
	return ks
}

// newAuthority returns an Authority over ks whose clock reads *now.
func newAuthority(t testing.TB, ks *KeySet, now *time.Time) *Authority {
	t.Helper()
	a, err := New(Options{
		Issuer:   testIssuer,
		Audience: testAudience,
		Keys:     ks,
		Now:      func() time.Time { return *now },
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}
