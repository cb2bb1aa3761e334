// Package testauth is the tests' one auth fixture: signing keys, an Authority with the test
// issuer and audience, and signed bearer tokens. A token minted here carries no revocation
// metadata; where the bearer check needs it, tests issue through the token service instead.
package testauth

import (
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
)

// Issuer and Audience are the claims every test Authority signs and expects.
const (
	Issuer   = "hashgate-test"
	Audience = "hashgate-test"
	// Subject is the subject of the tokens Mint signs.
	Subject = "svc-test"
)

// Keys returns a fresh signing key set.
func Keys(tb testing.TB) *auth.KeySet {
	tb.Helper()
	ks, err := auth.GenerateKeySet()
	if err != nil {
		tb.Fatal(err)
	}
	return ks
}

// New returns an Authority built from o, with o's empty Issuer, Audience and Keys set to the
// test issuer, the test audience and a fresh key set.
func New(tb testing.TB, o auth.Options) *auth.Authority {
	tb.Helper()
	if o.Issuer == "" {
		o.Issuer = Issuer
	}
	if o.Audience == "" {
		o.Audience = Audience
	}
	if o.Keys == nil {
		o.Keys = Keys(tb)
	}
	a, err := auth.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// Mint signs a one-hour service token of Subject for tenant with scopes.
func Mint(tb testing.TB, a *auth.Authority, tenant string, scopes ...string) string {
	tb.Helper()
	tok, _, err := a.Mint(auth.MintInput{Subject: Subject, Tenant: tenant, Scopes: scopes, TTL: time.Hour, TokenType: "service"})
	if err != nil {
		tb.Fatalf("mint: %v", err)
	}
	return tok
}
