package handlers

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// tokenEnv is what gateway replicas share: signing keys and the HMAC key (the key prefix is
// the harness's).
type tokenEnv struct {
	auth   *auth.Authority
	hasher *keyhash.Hasher
}

func newTokenEnv(t *testing.T, keys *auth.KeySet) tokenEnv {
	t.Helper()
	a := testauth.New(t, auth.Options{Keys: keys})
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return tokenEnv{auth: a, hasher: h}
}

// harness builds a gateway replica over s and prefix with e's keys, its token service set as
// o asks (MaxTTL 0: 24h; the repository's safety window is 1m).
func (e tokenEnv) harness(t testing.TB, s *store.Store, prefix string, o tokens.Options) *harness {
	t.Helper()
	if o.MaxTTL == 0 {
		o.MaxTTL = 24 * time.Hour
	}
	return newHarnessWith(t, s, TestGateway{Prefix: prefix, Auth: e.auth, Hasher: e.hasher, Config: func(c *config.Config) {
		c.TokenMaxTTL, c.TokenCacheTTL, c.TokenSafetyWindow = o.MaxTTL, o.CacheTTL, time.Minute
	}}, nil)
}

// tokenPeerStore opens a second connection to the Redis behind s, as another gateway replica:
// client-side caching on where the backend supports it (the embedded store has no tracking).
func tokenPeerStore(t *testing.T, b testredis.Backend, s *store.Store) *store.Store {
	t.Helper()
	if !s.Caps.Embedded {
		p := testredis.Open(t, b)
		if !p.Caps.ClientCache {
			t.Fatal("peer opened without client-side caching")
		}
		return p
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.EmbeddedAddr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &store.Store{Client: store.WithTimeout(c, time.Second), Caps: s.Caps, Timeout: time.Second}
}

func tokenKeyCount(t *testing.T, s *store.Store, prefix string) int {
	t.Helper()
	n := 0
	for _, node := range s.Client.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(context.Background(), node.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			n += len(e.Elements)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return n
}

func mustIssueToken(t *testing.T, h *harness, bearer string, body any) TokenIssued {
	t.Helper()
	rec := h.do("POST", "/v1/tokens", body, "Authorization", bearer)
	if rec.Code != http.StatusCreated {
		t.Fatalf("issue: %d %s", rec.Code, rec.Body)
	}
	var out TokenIssued
	decode(t, rec, &out)
	if rec.Header().Get("Location") != "/v1/tokens/"+out.TokenId || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("issue headers: %v", rec.Header())
	}
	return out
}

func tokenRequest(ttl int, scopes ...string) map[string]any {
	return map[string]any{"subject": "svc-b", "scopes": scopes, "ttlSeconds": ttl, "tokenType": "service"}
}

// Issue on one gateway, use the token on a second gateway sharing the Redis (client-side
// caching on), revoke on the first: the second refuses the very next request once the
// invalidation push lands — well within one cache round, although its cache TTL is a minute.
func TestTokenRevocationReachesAnotherInstance(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		env := newTokenEnv(t, nil)
		h1 := env.harness(t, s, prefix, tokens.Options{CacheTTL: 5 * time.Second})
		h2 := env.harness(t, tokenPeerStore(t, b, s), prefix, tokens.Options{CacheTTL: time.Minute})
		admin := h1.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead)
		out := mustIssueToken(t, h1, admin, tokenRequest(3600, auth.ScopeTokensRead))

		// The metadata key's TTL is the token's life plus the one-minute safety window.
		key := prefix + ":v1:token:{" + env.hasher.Tag("tenant", 9, "acme") + "}:" + out.TokenId
		ms, err := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64()
		want := time.Until(out.ExpiresAt.Time) + time.Minute
		if got := time.Duration(ms) * time.Millisecond; err != nil || got > want+time.Second || got < want-5*time.Second {
			t.Fatalf("metadata TTL %v (%v), want about %v", got, err, want)
		}

		use := "Bearer " + out.Token
		for range 3 {
			if rec := h2.do("GET", "/v1/tokens", nil, "Authorization", use); rec.Code != 200 {
				t.Fatalf("use on the second instance: %d %s", rec.Code, rec.Body)
			}
		}
		for range 2 { // idempotent
			if rec := h1.do("DELETE", "/v1/tokens/"+out.TokenId+"?reason=leaked", nil, "Authorization", admin); rec.Code != 204 {
				t.Fatalf("revoke: %d %s", rec.Code, rec.Body)
			}
		}
		deadline := time.Now().Add(tokens.DefaultCacheTTL)
		for {
			rec := h2.do("GET", "/v1/tokens", nil, "Authorization", use)
			if rec.Code == 401 {
				p := wantProblem(t, rec, 401, "invalid-credentials")
				if !strings.Contains(p.Detail, "revoked") {
					t.Fatalf("detail = %q", p.Detail)
				}
				break
			}
			if rec.Code != 200 || time.Now().After(deadline) {
				t.Fatalf("after revocation the second instance answers %d %s", rec.Code, rec.Body)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if rec := h1.do("GET", "/v1/tokens", nil, "Authorization", use); rec.Code != 401 {
			t.Fatalf("first instance after revocation: %d", rec.Code)
		}
		var meta TokenMeta
		rec := h1.do("GET", "/v1/tokens/"+out.TokenId, nil, "Authorization", admin)
		decode(t, rec, &meta)
		if rec.Code != 200 || !meta.Revoked || meta.RevokedReason == nil || *meta.RevokedReason != "leaked" || meta.RevokedAt == nil {
			t.Fatalf("metadata after revoke: %d %s", rec.Code, rec.Body)
		}
		if ms2, _ := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64(); ms2 <= 0 || ms2 > ms {
			t.Fatalf("revocation changed the key TTL: %d → %d", ms, ms2)
		}
	})
}

func TestTokensAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	admin := h.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead, auth.ScopeQuotesRead)
	out := mustIssueToken(t, h, admin, map[string]any{"subject": "svc-b", "scopes": []string{"quotes:read", "tokens:read"},
		"ttlSeconds": 600, "tokenType": "user", "description": "ci runner"})
	if out.TokenType != "user" || len(out.Scopes) != 2 || time.Until(out.ExpiresAt.Time) > 601*time.Second || time.Until(out.ExpiresAt.Time) < 590*time.Second {
		t.Fatalf("issued = %+v", out)
	}
	rec := h.do("GET", "/v1/tokens/"+out.TokenId, nil, "Authorization", admin)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), out.Token) {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	var meta TokenMeta
	decode(t, rec, &meta)
	if meta.TokenId != out.TokenId || meta.TenantId != "acme" || meta.Subject != "svc-b" || meta.TokenType != "user" ||
		meta.Description == nil || *meta.Description != "ci runner" || meta.Revoked || !meta.ExpiresAt.Equal(out.ExpiresAt.Time) {
		t.Fatalf("meta = %+v", meta)
	}
	// Introspection, JSON and form, by a caller of the same tenant.
	introspect := func(h *harness, bearer string, body any, ct string) Introspection {
		t.Helper()
		rec := h.do("POST", "/v1/tokens/introspect", body, "Authorization", bearer, "Content-Type", ct)
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("introspect: %d %s", rec.Code, rec.Body)
		}
		var in Introspection
		decode(t, rec, &in)
		return in
	}
	in := introspect(h, admin, map[string]string{"token": out.Token}, "application/json")
	if !in.Active || *in.Jti != out.TokenId || *in.TenantId != "acme" || *in.Sub != "svc-b" || *in.Scope != "quotes:read tokens:read" || *in.Exp != out.ExpiresAt.Unix() {
		t.Fatalf("introspection = %+v", in)
	}
	form := url.Values{"token": {out.Token}, "token_type_hint": {"access_token"}}.Encode()
	if in := introspect(h, admin, form, "application/x-www-form-urlencoded"); !in.Active {
		t.Fatal("form introspection inactive")
	}
	// Another tenant sees nothing: 404 on read, 204 on revoke (as for an unknown id; the token
	// stays live), inactive on introspection.
	stranger := h.bearer("other", auth.ScopeTokensWrite, auth.ScopeTokensRead)
	wantProblem(t, h.do("GET", "/v1/tokens/"+out.TokenId, nil, "Authorization", stranger), 404, "not-found")
	if rec := h.do("DELETE", "/v1/tokens/"+out.TokenId, nil, "Authorization", stranger); rec.Code != 204 {
		t.Fatalf("another tenant's revoke: %d %s", rec.Code, rec.Body)
	}
	if in := introspect(h, stranger, map[string]string{"token": out.Token}, "application/json"); in.Active || in.Jti != nil {
		t.Fatalf("another tenant's introspection = %+v", in)
	}
	// Revoke: 204, again 204, unknown 204; then introspection answers active:false.
	for _, id := range []string{out.TokenId, out.TokenId, auth.NewTokenID(time.Now())} {
		if rec := h.do("DELETE", "/v1/tokens/"+id, nil, "Authorization", admin); rec.Code != 204 {
			t.Fatalf("revoke %s: %d %s", id, rec.Code, rec.Body)
		}
	}
	if in := introspect(h, admin, map[string]string{"token": out.Token}, "application/json"); in.Active {
		t.Fatal("revoked token introspects active")
	}
	wantProblem(t, h.do("GET", "/v1/tokens/"+auth.NewTokenID(time.Now()), nil, "Authorization", admin), 404, "not-found")
	// Paging over HTTP: newest first, nextCursor until the last page.
	var ids []string
	for range 5 {
		ids = append(ids, mustIssueToken(t, h, admin, tokenRequest(600, "quotes:read")).TokenId)
		time.Sleep(2 * time.Millisecond) // distinct milliseconds: issue order = id order
	}
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		rec := h.do("GET", "/v1/tokens?limit=2"+cursor, nil, "Authorization", admin)
		var p TokenPage
		decode(t, rec, &p)
		if rec.Code != 200 || len(p.Items) > 2 || page > 10 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		for _, it := range p.Items {
			seen = append(seen, it.TokenId)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *p.NextCursor
	}
	// The five newest, newest first, then the revoked one and the admin's own token.
	if len(seen) != 7 || strings.Join(seen[:5], ",") != strings.Join([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}, ",") {
		t.Fatalf("listed %v, issued %v", seen, ids)
	}
}

// A token signed by an older key still in the set passes the whole check (signature, then
// metadata); once the key is removed from the set its tokens are refused.
func TestTokenSignedByOlderKeyPassesTheWholeCheck(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	prefix := testredis.Prefix(t)
	_, oldKey, _ := ed25519.GenerateKey(nil)
	_, newKey, _ := ed25519.GenerateKey(nil)
	oldSet, _ := auth.NewKeySet(auth.Key{Private: oldKey})
	rotated, _ := auth.NewKeySet(auth.Key{Private: newKey}, auth.Key{Private: oldKey})
	retired, _ := auth.NewKeySet(auth.Key{Private: newKey})
	before := newTokenEnv(t, oldSet)
	hOld := before.harness(t, s, prefix, tokens.Options{})
	oldToken := hOld.bearer("acme", auth.ScopeTokensRead)

	after := tokenEnv{auth: tokenAuthority(t, rotated), hasher: before.hasher}
	hNew := after.harness(t, s, prefix, tokens.Options{})
	if rec := hNew.do("GET", "/v1/tokens", nil, "Authorization", oldToken); rec.Code != 200 {
		t.Fatalf("old-key token after rotation: %d %s", rec.Code, rec.Body)
	}
	if newToken := hNew.bearer("acme", auth.ScopeTokensRead); !strings.Contains(newToken, ".") ||
		hNew.do("GET", "/v1/tokens", nil, "Authorization", newToken).Code != 200 {
		t.Fatal("new-key token refused")
	}
	rec := hNew.do("GET", "/.well-known/jwks.json", nil)
	var set JWKS
	decode(t, rec, &set)
	if len(set.Keys) != 2 || set.Keys[0].Kid != rotated.SigningKID() {
		t.Fatalf("jwks = %s", rec.Body)
	}
	gone := tokenEnv{auth: tokenAuthority(t, retired), hasher: before.hasher}
	hGone := gone.harness(t, s, prefix, tokens.Options{})
	p := wantProblem(t, hGone.do("GET", "/v1/tokens", nil, "Authorization", oldToken), 401, "invalid-credentials")
	if !strings.Contains(p.Detail, "kid") {
		t.Fatalf("detail = %q", p.Detail)
	}
}

func tokenAuthority(t *testing.T, ks *auth.KeySet) *auth.Authority {
	t.Helper()
	return testauth.New(t, auth.Options{Keys: ks})
}

// forgedToken builds a token with the gateway's claims (and a real token id) in ways the verifier
// must refuse.
func forgedToken(t *testing.T, method jwt.SigningMethod, key any, kid, iss, aud string) string {
	t.Helper()
	now := time.Now()
	c := auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: iss, Subject: "svc", Audience: jwt.ClaimStrings{aud},
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
		ID: auth.NewTokenID(now)}, Tenant: "acme", Scope: "tokens:read tokens:write"}
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Bad input: every refusal is a 4xx problem (or active:false from introspection), never a 5xx,
// and nothing is written to Redis.
func TestTokensBadInput(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		env := newTokenEnv(t, nil)
		h := env.harness(t, s, prefix, tokens.Options{MaxTTL: 24 * time.Hour, CacheTTL: 5 * time.Second})
		admin := h.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead)
		narrow := h.bearer("acme", auth.ScopeTokensWrite)
		live := mustIssueToken(t, h, admin, tokenRequest(600, "tokens:read"))

		kid := env.auth.Keys().SigningKID()
		pub, _ := env.auth.Keys().PublicKey(kid)
		_, deletedKey, _ := ed25519.GenerateKey(nil)
		deletedKID := auth.Thumbprint(deletedKey.Public().(ed25519.PublicKey))
		wrongIss := testauth.New(t, auth.Options{Issuer: "evil", Keys: env.auth.Keys()})
		wrongAud := testauth.New(t, auth.Options{Audience: "evil", Keys: env.auth.Keys()})
		mint := func(a *auth.Authority) string { return testauth.Mint(t, a, "acme", "tokens:read") }
		badTokens := map[string]string{
			"malformed":                 "not.a.jwt",
			"three garbage parts":       "eyJhbGciOiJFZERTQSJ9.e30.AAAA",
			"alg none":                  forgedToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, testauth.Issuer, testauth.Audience),
			"HS256 with the public key": forgedToken(t, jwt.SigningMethodHS256, []byte(pub), kid, testauth.Issuer, testauth.Audience),
			"wrong issuer":              mint(wrongIss),
			"wrong audience":            mint(wrongAud),
			"deleted key id":            forgedToken(t, jwt.SigningMethodEdDSA, deletedKey, deletedKID, testauth.Issuer, testauth.Audience),
			"10 KB token":               strings.Repeat("eyJh", 2560),
			"no metadata":               mint(env.auth),
		}
		long := strings.Repeat("x", 300)
		type req struct {
			name, method, path string
			body               any
			headers            []string
		}
		tests := []req{
			{"unknown scope", "POST", "/v1/tokens", tokenRequest(600, "admin"), nil},
			{"scope the caller lacks", "POST", "/v1/tokens", tokenRequest(600, "quotes:read"), []string{"Authorization", narrow}},
			{"ttl too short", "POST", "/v1/tokens", tokenRequest(59, "tokens:read"), nil},
			{"ttl over the contract", "POST", "/v1/tokens", tokenRequest(31536001, "tokens:read"), nil},
			{"ttl over the configured max", "POST", "/v1/tokens", tokenRequest(86401, "tokens:read"), nil},
			{"ttl as a string", "POST", "/v1/tokens", `{"subject":"a","scopes":["tokens:read"],"ttlSeconds":"600","tokenType":"service"}`, nil},
			{"ttl huge", "POST", "/v1/tokens", `{"subject":"a","scopes":["tokens:read"],"ttlSeconds":1e300,"tokenType":"service"}`, nil},
			{"garbage subject", "POST", "/v1/tokens", map[string]any{"subject": "a b/{c}\u0000", "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "service"}, nil},
			{"long subject", "POST", "/v1/tokens", map[string]any{"subject": long, "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "service"}, nil},
			{"garbage type", "POST", "/v1/tokens", map[string]any{"subject": "a", "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "root"}, nil},
			{"long description", "POST", "/v1/tokens", map[string]any{"subject": "a", "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "user", "description": long}, nil},
			{"duplicate scopes", "POST", "/v1/tokens", tokenRequest(600, "tokens:read", "tokens:read"), nil},
			{"no scopes", "POST", "/v1/tokens", tokenRequest(600), nil},
			{"scopes not a list", "POST", "/v1/tokens", `{"subject":"a","scopes":"tokens:read","ttlSeconds":600,"tokenType":"service"}`, nil},
			{"extra field", "POST", "/v1/tokens", map[string]any{"subject": "a", "scopes": []string{"tokens:read"}, "ttlSeconds": 600, "tokenType": "user", "tenant": "other"}, nil},
			{"all null", "POST", "/v1/tokens", `{"subject":null,"scopes":null,"ttlSeconds":null,"tokenType":null}`, nil},
			{"array body", "POST", "/v1/tokens", `[]`, nil},
			{"truncated body", "POST", "/v1/tokens", `{"subject":`, nil},
			{"wrong content type", "POST", "/v1/tokens", "subject=a", []string{"Content-Type", "text/plain"}},
			{"limit zero", "GET", "/v1/tokens?limit=0", nil, nil},
			{"limit huge", "GET", "/v1/tokens?limit=1000000", nil, nil},
			{"limit garbage", "GET", "/v1/tokens?limit=abc", nil, nil},
			{"cursor garbage", "GET", "/v1/tokens?cursor=%7B%7D%0A", nil, nil},
			{"cursor not an id", "GET", "/v1/tokens?cursor=abc", nil, nil},
			{"id garbage", "GET", "/v1/tokens/%7Bx%7D", nil, nil},
			{"id too long", "GET", "/v1/tokens/" + strings.Repeat("0", 27), nil, nil},
			{"revoke id garbage", "DELETE", "/v1/tokens/..%2F..", nil, nil},
			{"revoke reason newline", "DELETE", "/v1/tokens/" + live.TokenId + "?reason=a%0Ab", nil, nil},
			{"revoke reason long", "DELETE", "/v1/tokens/" + live.TokenId + "?reason=" + long, nil, nil},
			{"introspect no token", "POST", "/v1/tokens/introspect", `{}`, nil},
			{"introspect token not a string", "POST", "/v1/tokens/introspect", `{"token":5}`, nil},
			{"introspect extra field", "POST", "/v1/tokens/introspect", `{"token":"x","tenant":"other"}`, nil},
			{"introspect empty form", "POST", "/v1/tokens/introspect", "token=", []string{"Content-Type", "application/x-www-form-urlencoded"}},
			{"introspect 10 KB token", "POST", "/v1/tokens/introspect", map[string]string{"token": strings.Repeat("a", 10<<10)}, nil},
		}
		for name, tok := range badTokens {
			tests = append(tests,
				req{"bearer " + name, "GET", "/v1/tokens", nil, []string{"Authorization", "Bearer " + tok}},
				req{"bearer " + name + " issuing", "POST", "/v1/tokens", tokenRequest(600, "tokens:read"), []string{"Authorization", "Bearer " + tok}})
		}
		before := tokenKeyCount(t, s, prefix)
		for _, tt := range tests {
			headers := append([]string{"Authorization", admin}, tt.headers...)
			rec := h.do(tt.method, tt.path, tt.body, headers...)
			if rec.Code < 400 || rec.Code >= 500 {
				t.Errorf("%s: %d %s", tt.name, rec.Code, rec.Body)
				continue
			}
			// Every refusal has its own status and problem type: a bad token 401, a missing
			// scope 403, a body that is not JSON 415, everything else a 400 naming the field.
			status, slug := 400, "validation"
			switch {
			case strings.HasPrefix(tt.name, "bearer "):
				status, slug = 401, "invalid-credentials"
			case tt.name == "scope the caller lacks":
				status, slug = 403, "insufficient-scope"
			case tt.name == "wrong content type":
				status, slug = 415, "unsupported-media-type"
			}
			if rec.Code != status {
				t.Errorf("%s: %d, want %d; body %s", tt.name, rec.Code, status, rec.Body)
				continue
			}
			wantProblem(t, rec, status, slug)
		}
		// Introspecting each bad token answers active:false (a 10 KB token is over the
		// contract's 8 KiB bound: 400).
		for name, tok := range badTokens {
			rec := h.do("POST", "/v1/tokens/introspect", map[string]string{"token": tok}, "Authorization", admin)
			if rec.Code == 400 && len(tok) > 8192 {
				continue
			}
			if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"active":false}` {
				t.Errorf("introspect %s: %d %s", name, rec.Code, rec.Body)
			}
		}
		if after := tokenKeyCount(t, s, prefix); after != before {
			t.Fatalf("refused requests wrote to Redis: %d keys → %d", before, after)
		}
		if rec := h.do("GET", "/v1/tokens/"+live.TokenId, nil, "Authorization", admin); !strings.Contains(rec.Body.String(), `"revoked":false`) {
			t.Fatalf("a refused revoke changed the token: %s", rec.Body)
		}
	})
}

// With Redis unreachableRedis and nothing cached, the check fails closed: 503 with Retry-After.
func TestTokenCheckFailsClosed(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	prefix := testredis.Prefix(t)
	env := newTokenEnv(t, nil)
	up := env.harness(t, s, prefix, tokens.Options{CacheTTL: 5 * time.Second})
	bearer := up.bearer("acme", auth.ScopeTokensRead)
	broken := *s
	broken.Client = unreachableRedis{s.Client}
	h := env.harness(t, &broken, prefix, tokens.Options{CacheTTL: 5 * time.Second})
	rec := h.do("GET", "/v1/tokens", nil, "Authorization", bearer)
	wantProblem(t, rec, 503, "unavailable")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}

type unreachableRedis struct{ rueidis.Client }

func (unreachableRedis) Do(context.Context, rueidis.Completed) rueidis.RedisResult {
	return rueidis.NewErrorResult(fmt.Errorf("dial: %w", storeerr.ErrUnavailable))
}

func (unreachableRedis) DoCache(context.Context, rueidis.Cacheable, time.Duration) rueidis.RedisResult {
	return rueidis.NewErrorResult(fmt.Errorf("dial: %w", storeerr.ErrUnavailable))
}

// A token check that fails for another reason than a verdict on the token (a bug, a reply it
// cannot read) is a 500: a 401 would tell the client to drop a token that may be good.
func TestTokenCheckFailureIsNotARefusal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], func(h *harness, d *Deps) { d.TokenCheck = failingCheck{} })
	rec := h.do("GET", "/v1/tokens", nil, "Authorization", h.bearer("acme", auth.ScopeTokensRead))
	wantProblem(t, rec, 500, "internal")
}

type failingCheck struct{}

func (failingCheck) Check(context.Context, *auth.Claims) error {
	return errors.New("token state: the reply could not be read")
}

// The same for a session that could not be checked.
func TestSessionCheckFailureIsNotARefusal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], func(h *harness, d *Deps) { d.SessionAuth = failingSessions{} })
	rec := h.do("GET", "/v1/session", nil, "X-Session-Token", "hgs_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAA_"+strings.Repeat("A", 43))
	wantProblem(t, rec, 500, "internal")
}

type failingSessions struct{}

func (failingSessions) Authenticate(context.Context, string) (*auth.Principal, error) {
	return nil, errors.New("session: the reply could not be read")
}

func (f failingSessions) AuthenticateView(ctx context.Context, tok string) (*auth.Principal, error) {
	return f.Authenticate(ctx, tok)
}
