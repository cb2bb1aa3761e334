package handlers

import (
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestTokenLineageOverHTTP, as a user sees it on every backend: A is a root token (the
// bootstrap/CLI path), B is minted with POST /v1/tokens using A, C using B. B asks to live past
// A and its expiresAt is A's. DELETE /v1/tokens/{A} answers 204; then B and C answer 401 on
// use, on this gateway and on a second one sharing the Redis, and introspect active:false;
// GET shows them revoked with a reason naming A.
func TestTokenLineageOverHTTP(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		env := newTokenEnv(t, nil)
		h1 := env.harness(t, s, prefix, tokens.Options{CacheTTL: 5 * time.Second})
		h2 := env.harness(t, tokenPeerStore(t, b, s), prefix, tokens.Options{CacheTTL: time.Minute})
		// A is another root: the admin revokes it with tokens:admin.
		admin := h1.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead, auth.ScopeTokensAdmin)
		a := h1.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead) // a root, 1 h
		aClaims, err := env.auth.Verify(strings.TrimPrefix(a, "Bearer "))
		if err != nil {
			t.Fatal(err)
		}
		bOut := mustIssueToken(t, h1, a, tokenRequest(3*3600, auth.ScopeTokensWrite, auth.ScopeTokensRead))
		if !bOut.ExpiresAt.Equal(aClaims.ExpiresAt.Time) {
			t.Fatalf("B expiresAt %v, past its issuer's %v", bOut.ExpiresAt, aClaims.ExpiresAt.Time)
		}
		cOut := mustIssueToken(t, h2, "Bearer "+bOut.Token, tokenRequest(600, auth.ScopeTokensRead))
		users := map[string]string{"B": "Bearer " + bOut.Token, "C": "Bearer " + cOut.Token}
		for name, use := range users {
			for _, h := range []*harness{h1, h2} {
				if rec := h.do("GET", "/v1/tokens", nil, "Authorization", use); rec.Code != 200 {
					t.Fatalf("%s before the revocation: %d %s", name, rec.Code, rec.Body)
				}
			}
		}
		if rec := h1.do("DELETE", "/v1/tokens/"+aClaims.ID+"?reason=leaked", nil, "Authorization", admin); rec.Code != 204 {
			t.Fatalf("revoke A: %d %s", rec.Code, rec.Body)
		}
		for name, use := range users {
			wantProblem(t, h1.do("GET", "/v1/tokens", nil, "Authorization", use), 401, "invalid-credentials")
			deadline := time.Now().Add(5 * time.Second) // the other gateway learns it from the push
			for {
				rec := h2.do("GET", "/v1/tokens", nil, "Authorization", use)
				if rec.Code == 401 {
					break
				}
				if rec.Code != 200 || time.Now().After(deadline) {
					t.Fatalf("%s on the second gateway after A's revocation: %d %s", name, rec.Code, rec.Body)
				}
				time.Sleep(5 * time.Millisecond)
			}
			rec := h1.do("POST", "/v1/tokens/introspect", map[string]string{"token": strings.TrimPrefix(use, "Bearer ")}, "Authorization", admin)
			var in Introspection
			decode(t, rec, &in)
			if rec.Code != 200 || in.Active {
				t.Fatalf("introspect %s: %d %s", name, rec.Code, rec.Body)
			}
		}
		for id, parent := range map[string]string{bOut.TokenId: aClaims.ID, cOut.TokenId: bOut.TokenId} {
			rec := h1.do("GET", "/v1/tokens/"+id, nil, "Authorization", admin)
			var m TokenMeta
			decode(t, rec, &m)
			if rec.Code != 200 || !m.Revoked || m.RevokedAt == nil || m.RevokedReason == nil || !strings.Contains(*m.RevokedReason, aClaims.ID) ||
				m.ParentId == nil || *m.ParentId != parent {
				t.Fatalf("GET %s after A's revocation: %d %s", id, rec.Code, rec.Body)
			}
		}
	})
}
