package auth

import (
	"strconv"
	"testing"
	"time"
)

// actorChain is an act chain of n actors a1 (most recent) .. an.
func actorChain(n int) *Actor {
	var a *Actor
	for i := n; i >= 1; i-- {
		a = &Actor{Subject: "a" + strconv.Itoa(i), Act: a}
	}
	return a
}

// A minted token's act claim (RFC 8693 §4.1) survives signing and verification, nested; the
// principal names the most recent actor. Mint refuses a chain no lineage can produce.
func TestActClaimRoundTrip(t *testing.T) {
	t.Parallel()
	now := t0
	a := newAuthority(t, mustKeys(t, seedB64(1)), &now)
	for _, n := range []int{0, 1, 2, MaxActorDepth} {
		tok, _, err := a.Mint(MintInput{Subject: "alice", Tenant: "acme", TTL: time.Hour, Act: actorChain(n)})
		if err != nil {
			t.Fatalf("mint with %d actors: %v", n, err)
		}
		c, err := a.Verify(tok)
		if err != nil {
			t.Fatalf("verify with %d actors: %v", n, err)
		}
		if got := c.Act.depth(); got != n {
			t.Fatalf("%d actors came back as %d", n, got)
		}
		if p := PrincipalFromClaims(c); (p.Act == nil) != (n == 0) || n > 0 && p.Act.Subject != "a1" {
			t.Fatalf("principal's act %+v, want the chain from a1", p.Act)
		}
	}
	for name, act := range map[string]*Actor{"too deep": actorChain(MaxActorDepth + 1), "no subject": {Act: actorChain(1)}} {
		if _, _, err := a.Mint(MintInput{Subject: "alice", Tenant: "acme", TTL: time.Hour, Act: act}); err == nil {
			t.Errorf("%s: minted", name)
		}
	}
}
