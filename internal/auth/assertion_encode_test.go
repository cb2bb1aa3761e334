package auth

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The directly written assertion is byte for byte what golang-jwt's SignedString makes of the
// same claims (Ed25519 is deterministic): plain and awkward strings, groups or none, a session
// or a minted token with its actor chain.
func TestAssertionEncodingMatchesJSON(t *testing.T) {
	key := mustKeys(t, seedB64(3)).keys[0]
	now := time.Unix(1_800_000_123, 0)
	base := func() AssertionClaims {
		return AssertionClaims{
			RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://gw.example", Subject: "alice", Audience: jwt.ClaimStrings{AssertionAudience},
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AssertionTTL)), ID: NewTokenID(now)},
			Tenant: "acme", Kind: "session", Level: "BASIC", SessionID: "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB",
		}
	}
	cases := map[string]func(c *AssertionClaims){
		"plain session":  func(*AssertionClaims) {},
		"groups":         func(c *AssertionClaims) { c.Groups = []string{"staff", "admins"} },
		"empty group":    func(c *AssertionClaims) { c.Groups = []string{""} },
		"escapes":        func(c *AssertionClaims) { c.Subject, c.Tenant = `a"b\c<d>&e`, "tab\there\nnl\x01" },
		"unicode":        func(c *AssertionClaims) { c.Subject, c.Groups = "zoë \u2028 日本", []string{"ü", "\U0001F600"} },
		"invalid utf-8":  func(c *AssertionClaims) { c.Subject = "bad\xffbyte" },
		"empty subject":  func(c *AssertionClaims) { c.Subject, c.Tenant, c.Level = "", "", "" },
		"no issuer":      func(c *AssertionClaims) { c.Issuer, c.ID = "", "" },
		"sub-second iat": func(c *AssertionClaims) { c.IssuedAt = jwt.NewNumericDate(now.Add(250 * time.Millisecond)) },
		"not before":     func(c *AssertionClaims) { c.NotBefore = jwt.NewNumericDate(now) },
		"minted token": func(c *AssertionClaims) {
			c.Kind, c.SessionID, c.TokenID = "token", "", "01jabcdefghjkmnpqrstvwxyz0"
			c.Act = &Actor{Subject: "svc", Act: &Actor{Subject: "root<1>"}}
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			c := base()
			change(&c)
			tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
			tok.Header["kid"] = key.ID
			want, err := tok.SignedString(key.Private)
			if err != nil {
				t.Fatal(err)
			}
			got, err := signAssertion(key.Private, key.ID, &c)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("assertion\n got %s\nwant %s", got, want)
			}
		})
	}
}

// BenchmarkAssertionSign is one assertion's signature as golang-jwt makes it and as
// signAssertion does (a session's first sighting on the forward-auth path pays one).
//
//	go test -run '^$' -bench BenchmarkAssertionSign -benchmem ./internal/auth/
func BenchmarkAssertionSign(b *testing.B) {
	key := mustKeys(b, seedB64(3)).keys[0]
	now := time.Unix(1_800_000_123, 0)
	c := AssertionClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "https://gw.example", Subject: "bench-user-000123", Audience: jwt.ClaimStrings{AssertionAudience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(AssertionTTL)), ID: NewTokenID(now)},
		Tenant: "default", Kind: "session", Level: "BASIC", SessionID: "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB",
	}
	b.Run("golang-jwt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
			tok.Header["kid"] = key.ID
			if _, err := tok.SignedString(key.Private); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := signAssertion(key.Private, key.ID, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
