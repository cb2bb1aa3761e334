package auth

import (
	"testing"
	"time"
)

func TestVerifyCache(t *testing.T) {
	t.Parallel()
	ks, err := GenerateKeySet()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	a, err := New(Options{Issuer: "i", Audience: "a", Keys: ks, Now: clock, VerifyCacheSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.Mint(MintInput{Subject: "s", Tenant: "t", Scopes: []string{"tokens:read"}, TTL: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.verified.get(tok, now, a.leeway); !ok {
		t.Fatal("a verified token is not cached")
	}
	// A tampered token never hits the cache entry of the real one.
	i := len(tok) - 10 // inside the signature, a character carrying 6 full bits
	flipped := byte('A')
	if tok[i] == 'A' {
		flipped = 'B'
	}
	if _, err := a.Verify(tok[:i] + string(flipped) + tok[i+1:]); err == nil {
		t.Fatal("tampered token verified")
	}
	// Past exp + leeway the cached entry is not served and verification fails.
	now = now.Add(2*time.Minute + DefaultLeeway + time.Second)
	if _, err := a.Verify(tok); err == nil {
		t.Fatal("expired token served from the cache")
	}
	// The cache stays within its bound.
	for i := 0; i < 5; i++ {
		x, _, _ := a.Mint(MintInput{Subject: "s", Tenant: "t", Scopes: []string{"tokens:read"}, TTL: time.Hour})
		if _, err := a.Verify(x); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.verified.m); n > 2 {
		t.Fatalf("cache holds %d entries, bound 2", n)
	}
}
