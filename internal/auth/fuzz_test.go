package auth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzVerify feeds arbitrary strings to the verifier: it must never panic, must refuse with an
// error wrapping ErrInvalidToken, and must never accept anything but a token it could have
// minted (same subject, tenant and id as a real one, which random input cannot forge).
func FuzzVerify(f *testing.F) {
	ks, err := GenerateKeySet()
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Options{Issuer: "fuzz", Audience: "fuzz", Keys: ks})
	if err != nil {
		f.Fatal(err)
	}
	good, _, err := a.Mint(MintInput{Subject: "s", Tenant: "t", Scopes: []string{"tokens:read"}, TTL: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(good, ".")
	for _, seed := range []string{
		good, "", ".", "..", "a.b.c", parts[0] + "." + parts[1] + ".",
		"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + ".",
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + parts[1] + "." + parts[2],
		parts[0] + "." + parts[1] + "x." + parts[2], strings.Repeat("A", 5000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := a.Verify(tok)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("error does not wrap ErrInvalidToken: %v", err)
			}
			if len(tok) > 8 && strings.Contains(err.Error(), tok) {
				t.Fatalf("error echoes the token")
			}
			return
		}
		if c.Subject != "s" || c.Tenant != "t" {
			t.Fatalf("accepted a token it did not mint: %+v", c)
		}
	})
}
