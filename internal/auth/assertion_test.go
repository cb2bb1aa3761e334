package auth

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// verifyWithJWKS verifies an assertion as an upstream does: with the gateway's JWKS only.
func verifyWithJWKS(t *testing.T, jwks []byte, token string, now time.Time) *AssertionClaims {
	t.Helper()
	var set struct{ Keys []JWK }
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	var claims AssertionClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(tok *jwt.Token) (any, error) {
		for _, k := range set.Keys {
			if k.Kid == tok.Header["kid"] {
				x, err := base64.RawURLEncoding.DecodeString(k.X)
				return ed25519.PublicKey(x), err
			}
		}
		return nil, jwt.ErrTokenUnverifiable
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithIssuer(testIssuer), jwt.WithAudience(AssertionAudience),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil {
		t.Fatalf("verify with the JWKS: %v", err)
	}
	return &claims
}

func TestAssertionVerifiesWithJWKS(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ks := mustKeys(t, seedB64(1))
	a := newAuthority(t, ks, &now)
	as := NewAsserter(a, 0)
	jwks, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	in := Assertion{Kind: "token", Subject: "svc", Tenant: "acme", Level: "BASIC", TokenID: "01jabcdefghjkmnpqrstvwxyz0", Act: &Actor{Subject: "root"}}
	tok, err := as.Assert(in)
	if err != nil {
		t.Fatal(err)
	}
	c := verifyWithJWKS(t, jwks, tok, now)
	if c.Subject != "svc" || c.Tenant != "acme" || c.Level != "BASIC" || c.Kind != "token" || c.TokenID != in.TokenID ||
		c.Act == nil || c.Act.Subject != "root" || c.ID == "" || c.SessionID != "" {
		t.Fatalf("claims %+v", c)
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt.Time); life <= 0 || life > 60*time.Second {
		t.Fatalf("lifetime %v, want ≤ 60 s", life)
	}
	if _, err := a.Verify(tok); err == nil {
		t.Fatal("an assertion passed as an access token")
	}
	// Reused while more than 20 s are left; a new one after, and for another identity.
	now = now.Add(39 * time.Second)
	if again, _ := as.Assert(in); again != tok {
		t.Fatal("not reused 39 s later")
	}
	now = now.Add(2 * time.Second)
	fresh, _ := as.Assert(in)
	if fresh == tok {
		t.Fatal("reused with less than 20 s left")
	}
	verifyWithJWKS(t, jwks, fresh, now)
	other := in
	other.Level = "MFA"
	if o, _ := as.Assert(other); o == fresh {
		t.Fatal("the kept assertion of another level was reused")
	}
	sess := Assertion{Kind: "session", Subject: "alice", Tenant: "acme", Level: "MFA", SessionID: "s_x"}
	st, _ := as.Assert(sess)
	if c := verifyWithJWKS(t, jwks, st, now); c.SessionID != "s_x" || c.TokenID != "" {
		t.Fatalf("session claims %+v", c)
	}
}

func TestAssertionCacheBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	as := NewAsserter(newAuthority(t, mustKeys(t, seedB64(1)), &now), 8)
	for i := range 100 {
		if _, err := as.Assert(Assertion{Kind: "session", Subject: "u", Tenant: "t", Level: "BASIC", SessionID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
		if n := len(as.m); n > 8 {
			t.Fatalf("%d assertions kept, bound 8", n)
		}
	}
}

// The default cache keeps a forward-auth working set: the 1M-session Zipf benchmark touches
// 41.5k distinct sessions, which the session memo (131,072 entries) answers without Redis; each
// one the asserter had dropped cost a fresh Ed25519 signature (about 25 µs, 15% of the gateway's
// CPU at 1M Zipf and 40% at uniform 100k with the old 10,000).
func TestAssertionDefaultCacheKeepsWorkingSet(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	as := NewAsserter(newAuthority(t, mustKeys(t, seedB64(1)), &now), 0)
	const distinct = 16_384
	in := func(i int) Assertion {
		return Assertion{Kind: "session", Subject: "u", Tenant: "t", Level: "BASIC", SessionID: "s_" + strconv.Itoa(i)}
	}
	first := make([]string, distinct)
	for i := range first {
		first[i], _ = as.Assert(in(i))
	}
	for i := range first {
		if again, _ := as.Assert(in(i)); again != first[i] {
			t.Fatalf("session %d of %d signed again within its assertion's life", i, distinct)
		}
	}
}

func TestAssertionReuseAllocatesNothing(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	as := NewAsserter(newAuthority(t, mustKeys(t, seedB64(1)), &now), 0)
	in := Assertion{Kind: "session", Subject: "alice", Tenant: "acme", Level: "BASIC", SessionID: "s_1"}
	_, _ = as.Assert(in)
	if n := testing.AllocsPerRun(100, func() { _, _ = as.Assert(in) }); n != 0 {
		t.Fatalf("reuse: %v allocations", n)
	}
}

// A session's groups are in its assertion; a change of its groups gets a new assertion at once,
// never the kept one stating the old groups.
func TestAssertionCarriesGroups(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ks := mustKeys(t, seedB64(1))
	as := NewAsserter(newAuthority(t, ks, &now), 0)
	jwks, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	in := Assertion{Kind: "session", Subject: "alice", Tenant: "acme", Level: "BASIC", SessionID: "s_x", Groups: []string{"staff"}}
	tok, _ := as.Assert(in)
	if c := verifyWithJWKS(t, jwks, tok, now); !slices.Equal(c.Groups, []string{"staff"}) {
		t.Fatalf("groups claim %v", c.Groups)
	}
	in.Groups = []string{"staff", "admins"}
	next, _ := as.Assert(in)
	if next == tok {
		t.Fatal("the kept assertion of the old groups was reused")
	}
	if c := verifyWithJWKS(t, jwks, next, now); !slices.Equal(c.Groups, []string{"staff", "admins"}) {
		t.Fatalf("groups claim %v", c.Groups)
	}
	in.Groups = nil
	none, _ := as.Assert(in)
	if c := verifyWithJWKS(t, jwks, none, now); c.Groups != nil {
		t.Fatalf("no groups, claim %v", c.Groups)
	}
}

func TestCustomScope(t *testing.T) {
	for s, want := range map[string]bool{
		"orders:write": true, "billing-v2:read.all": true, "a:b": true, "x_y:z-1": true,
		"sessions:admin": false, "tokens:mint": false, "events:read": false, "Orders:write": false, "orders": false,
		"orders:": false, ":write": false, "1orders:write": false, "orders:1w": false, "orders:write:x": false,
		"orders:" + strings.Repeat("w", 32): true, "orders:" + strings.Repeat("w", 33): false, "ordérs:write": false,
	} {
		if CustomScope(s) != want {
			t.Errorf("CustomScope(%q) = %v, want %v", s, !want, want)
		}
	}
	for _, s := range KnownScopes() {
		if !ValidScope(s) || CustomScope(s) {
			t.Errorf("built-in %q: valid %v, custom %v", s, ValidScope(s), CustomScope(s))
		}
	}
}

// A session answered from the gateway's decoded copy finds its assertion kept with that copy:
// handed out without the shared cache (emptied here), under the same rules (the same identity,
// more than 20 s left), and a new copy starts empty but finds the shared cache's.
func TestAssertionKeptWithTheCopy(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ks := mustKeys(t, seedB64(1))
	as := NewAsserter(newAuthority(t, ks, &now), 0)
	jwks, err := ks.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	in := Assertion{Kind: "session", Subject: "alice", Tenant: "acme", Level: "BASIC", SessionID: "s_x", Groups: []string{"staff"}}
	var kept session.Derived
	first, err := as.AssertKept(in, &kept)
	if err != nil {
		t.Fatal(err)
	}
	verifyWithJWKS(t, jwks, first, now)
	shared := as.m
	as.m = map[string]*assertionEntry{}
	if again, _ := as.AssertKept(in, &kept); again != first {
		t.Fatal("the assertion kept with the copy was not reused")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = as.AssertKept(in, &kept) }); n != 0 {
		t.Fatalf("reuse from the copy: %v allocations", n)
	}
	if len(as.m) != 0 {
		t.Fatal("the shared cache was consulted and filled for a kept assertion")
	}
	as.m = shared
	var fresh session.Derived // the session read again: a new copy
	if got, _ := as.AssertKept(in, &fresh); got != first {
		t.Fatal("a new copy did not find the shared cache's assertion")
	}
	mfa := in
	mfa.Level = "MFA"
	stepped, _ := as.AssertKept(mfa, &kept)
	if stepped == first {
		t.Fatal("the kept assertion of another level was reused")
	}
	if c := verifyWithJWKS(t, jwks, stepped, now); c.Level != "MFA" {
		t.Fatalf("level claim %q", c.Level)
	}
	now = now.Add(41 * time.Second)
	if late, _ := as.AssertKept(mfa, &kept); late == stepped {
		t.Fatal("the kept assertion was reused with less than 20 s left")
	}
}

// BenchmarkAssertHot is a hot session's assertion handed out again, among 41,500 kept ones (the
// 1M-session Zipf row's distinct sessions) looked up in a random order from GOMAXPROCS
// goroutines: through the shared cache (Assert: its read lock and map) and from the session's
// kept copy (AssertKept).
//
//	go test -run '^$' -bench BenchmarkAssertHot ./internal/auth/
func BenchmarkAssertHot(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	as := NewAsserter(newAuthority(b, mustKeys(b, seedB64(1)), &now), 0)
	const n = 41_500
	ins := make([]Assertion, n)
	kept := make([]session.Derived, n)
	for i := range ins {
		ins[i] = Assertion{Kind: "session", Subject: "user-" + strconv.Itoa(i), Tenant: "default", Level: "BASIC",
			SessionID: "s_" + strconv.Itoa(1e11+i) + "_" + strconv.Itoa(1e17+i)}
		if _, err := as.AssertKept(ins[i], &kept[i]); err != nil {
			b.Fatal(err)
		}
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	run := func(b *testing.B, assert func(i int) (string, error)) {
		var next atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			i := next.Add(1 << 20)
			for pb.Next() {
				i++
				if _, err := assert(order[i%n]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("shared-cache", func(b *testing.B) { run(b, func(i int) (string, error) { return as.Assert(ins[i]) }) })
	b.Run("kept", func(b *testing.B) { run(b, func(i int) (string, error) { return as.AssertKept(ins[i], &kept[i]) }) })
}
