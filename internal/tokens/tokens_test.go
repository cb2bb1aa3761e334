package tokens_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/repo/tokenstore"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

var admin = bearer(auth.KnownScopes()...)

func mintReq(scopes ...string) tokens.MintRequest {
	return tokens.MintRequest{Tenant: "acme", Subject: "svc-a", Scopes: scopes, TTL: time.Hour, TokenType: tokens.TypeService}
}

// A cached check makes no Redis call; a revocation on another replica invalidates the cached
// entry through Redis's push long before the cache TTL would, and the next check refuses.
func TestCachedCheckMakesNoRedisCallAndRevocationInvalidatesIt(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		c := testredis.NewCounter(s.Client)
		const cacheTTL = time.Minute // far longer than the test waits: only the push can invalidate
		svc := e.service(t, s, c, tokens.Options{CacheTTL: cacheTTL})
		other := e.service(t, peer(t, b, s, prefix), nil, tokens.Options{CacheTTL: cacheTTL})
		out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
		if err != nil {
			t.Fatal(err)
		}
		claims, err := e.auth.Verify(out.Token)
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Check(ctx, claims); err != nil {
			t.Fatalf("first check: %v", err)
		}
		calls := c.Sent()
		hits0, _ := svc.CacheStats()
		for range 100 {
			if err := svc.Check(ctx, claims); err != nil {
				t.Fatalf("check: %v", err)
			}
		}
		hits, _ := svc.CacheStats()
		if b.Real() && !s.Caps.ClientCache {
			t.Fatal("a real backend must run with client-side caching: the no-round-trip claim would go untested")
		}
		if s.Caps.ClientCache {
			if got := c.Sent() - calls; got != 0 {
				t.Fatalf("100 cached checks made %d Redis calls", got)
			}
			if hits-hits0 != 100 {
				t.Fatalf("cache hits %d, want 100", hits-hits0)
			}
		} else if got := c.Sent() - calls; got != 100 {
			t.Fatalf("without client caching 100 checks made %d Redis calls", got)
		}
		if _, err := other.Revoke(ctx, admin, out.TokenID, "test"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		before := c.Sent()
		for {
			err := svc.Check(ctx, claims)
			if errors.Is(err, apperr.InvalidCredentials) {
				break
			}
			if err != nil {
				t.Fatalf("check after revoke: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("revocation not seen after 5s (cache TTL %v)", cacheTTL)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if c.Sent() == before {
			t.Fatal("the refusing check did not read Redis: the cached entry was not invalidated")
		}
	})
}

func TestCheckRefusesWhatIsNotLive(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		svc := e.service(t, s, nil, tokens.Options{CacheTTL: 5 * time.Second})
		verified := func(tok string) *auth.Claims {
			c, err := e.auth.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		live, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead, auth.ScopeQuotesRead))
		if err != nil {
			t.Fatal(err)
		}
		revoked, _ := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
		if _, err := svc.Revoke(ctx, admin, revoked.TokenID, ""); err != nil {
			t.Fatal(err)
		}
		// Correctly signed, but never issued through the service: no metadata.
		unknown := testauth.Mint(t, e.auth, "acme", "tokens:read")
		otherTenant := verified(live.Token)
		otherTenant.Tenant = "evil"
		moreScopes := verified(live.Token)
		moreScopes.Scope += " tokens:write"
		badID := verified(live.Token)
		badID.ID = "../{x}"
		tests := []struct {
			name   string
			claims *auth.Claims
			ok     bool
		}{
			{"live", verified(live.Token), true},
			{"revoked", verified(revoked.Token), false},
			{"unknown", verified(unknown), false},
			{"tenant mismatch", otherTenant, false},
			{"scope mismatch", moreScopes, false},
			{"malformed id", badID, false},
		}
		for _, tt := range tests {
			err := svc.Check(ctx, tt.claims)
			if tt.ok && err != nil || !tt.ok && !errors.Is(err, apperr.InvalidCredentials) {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
		// Metadata whose expiry passed (within the key's safety window) is refused too.
		late := e.service(t, s, nil, tokens.Options{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		if err := late.Check(ctx, verified(live.Token)); !errors.Is(err, apperr.InvalidCredentials) {
			t.Errorf("expired record: %v", err)
		}
		// A record the store cannot read (written behind the gateway's back) is a 401 refusal,
		// as the store's corrupt error reaches the service through its own interface, not an
		// internal error. The key is docs/KEYS.md's <prefix>:v1:token:{<tenantTag>}:<tokenId>.
		key := prefix + ":v1:token:{" + e.hasher.TenantTag("acme") + "}:" + live.TokenID
		if err := s.Client.Do(ctx, s.Client.B().Hset().Key(key).FieldValue().FieldValue("revoked", "maybe").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		uncached := e.service(t, s, nil, tokens.Options{})
		if err := uncached.Check(ctx, verified(live.Token)); !errors.Is(err, apperr.InvalidCredentials) || errors.Is(err, storeerr.ErrUnavailable) {
			t.Errorf("corrupt record: %v, want 401 invalid-credentials", err)
		}
	})
}

func TestCheckFailsClosedWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	e := newEnv(t, testredis.Prefix(t))
	up := e.service(t, s, nil, tokens.Options{CacheTTL: 5 * time.Second})
	out, err := up.Mint(context.Background(), mintReq(auth.ScopeTokensRead))
	if err != nil {
		t.Fatal(err)
	}
	claims, _ := e.auth.Verify(out.Token)
	svc := e.service(t, s, down{s.Client}, tokens.Options{CacheTTL: 5 * time.Second})
	err = svc.Check(context.Background(), claims)
	if err == nil || !errors.Is(err, storeerr.ErrUnavailable) {
		t.Fatalf("check with Redis down = %v, want an unavailable error", err)
	}
	if _, ok := apperr.As(err); ok {
		t.Fatalf("unavailability must not look like a refusal: %v", err)
	}
	if strings.Contains(err.Error(), out.Token) {
		t.Fatal("error carries the token")
	}
	if _, err := svc.Introspect(context.Background(), admin, out.Token); !errors.Is(err, storeerr.ErrUnavailable) {
		t.Fatalf("introspect with Redis down = %v", err)
	}
}

// A failure reading a valid token's state says nothing about the token: the check answers an
// internal error (500), never the 401 a client reads as "drop this token", and introspection
// an error, never {active:false}.
func TestCheckUnexpectedErrorIsNotARefusal(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	e := newEnv(t, testredis.Prefix(t))
	up := e.service(t, s, nil, tokens.Options{CacheTTL: 5 * time.Second})
	out, err := up.Mint(context.Background(), mintReq(auth.ScopeTokensRead))
	if err != nil {
		t.Fatal(err)
	}
	claims, _ := e.auth.Verify(out.Token)
	svc := e.service(t, s, failing{s.Client}, tokens.Options{CacheTTL: 5 * time.Second})
	err = svc.Check(context.Background(), claims)
	if p, ok := apperr.As(err); !ok || p.Kind != apperr.Internal {
		t.Fatalf("check on an unexpected failure = %v, want an internal error (500)", err)
	}
	if !errors.Is(err, errUnexpected) {
		t.Fatalf("check error %v does not carry the cause", err)
	}
	got, err := svc.Introspect(context.Background(), admin, out.Token)
	if err == nil {
		t.Fatalf("introspect on an unexpected failure = %+v, want an error", got)
	}
}

func TestIssueRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		svc := e.service(t, s, nil, tokens.Options{MaxTTL: 24 * time.Hour})
		ok := tokens.IssueRequest{Subject: "svc-a", Scopes: []string{auth.ScopeQuotesRead}, TTL: time.Hour, TokenType: tokens.TypeService}
		with := func(f func(*tokens.IssueRequest)) tokens.IssueRequest {
			r := ok
			r.Scopes = append([]string(nil), ok.Scopes...)
			f(&r)
			return r
		}
		tests := []struct {
			name   string
			caller *auth.Principal
			req    tokens.IssueRequest
			want   *apperr.Kind
		}{
			{"no caller", nil, ok, apperr.Unauthenticated},
			{"unknown scope", admin, with(func(r *tokens.IssueRequest) { r.Scopes = []string{"admin"} }), apperr.Validation},
			{"custom scope on a gateway resource", admin, with(func(r *tokens.IssueRequest) { r.Scopes = []string{"sessions:admin"} }), apperr.Validation},
			{"custom scope in upper case", admin, with(func(r *tokens.IssueRequest) { r.Scopes = []string{"Orders:write"} }), apperr.Validation},
			{"custom scope too long", admin, with(func(r *tokens.IssueRequest) { r.Scopes = []string{"orders:" + strings.Repeat("w", 33)} }), apperr.Validation},
			{"custom scope the caller lacks", bearer(auth.ScopeTokensWrite), with(func(r *tokens.IssueRequest) { r.Scopes = []string{"orders:write"} }), apperr.InsufficientScope},
			{"no scopes", admin, with(func(r *tokens.IssueRequest) { r.Scopes = nil }), apperr.Validation},
			{"scope the caller lacks", bearer(auth.ScopeTokensWrite), ok, apperr.InsufficientScope},
			{"ttl too short", admin, with(func(r *tokens.IssueRequest) { r.TTL = 59 * time.Second }), apperr.Validation},
			{"ttl over the configured max", admin, with(func(r *tokens.IssueRequest) { r.TTL = 25 * time.Hour }), apperr.Validation},
			{"negative ttl", admin, with(func(r *tokens.IssueRequest) { r.TTL = -time.Hour }), apperr.Validation},
			{"bad subject", admin, with(func(r *tokens.IssueRequest) { r.Subject = "a b{c}" }), apperr.Validation},
			{"empty subject", admin, with(func(r *tokens.IssueRequest) { r.Subject = "" }), apperr.Validation},
			{"bad type", admin, with(func(r *tokens.IssueRequest) { r.TokenType = "root" }), apperr.Validation},
			{"long description", admin, with(func(r *tokens.IssueRequest) { r.Description = strings.Repeat("é", 257) }), apperr.Validation},
			{"control characters", admin, with(func(r *tokens.IssueRequest) { r.Description = "a\x00b" }), apperr.Validation},
			{"invalid utf-8", admin, with(func(r *tokens.IssueRequest) { r.Description = "\xff" }), apperr.Validation},
		}
		for _, tt := range tests {
			_, err := svc.Issue(ctx, tt.caller, tt.req)
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %s", tt.name, err, tt.want.Slug)
			}
		}
		if _, err := svc.Mint(ctx, tokens.MintRequest{Tenant: strings.Repeat("t", 129), Subject: "x", Scopes: []string{"tokens:read"}, TTL: time.Hour, TokenType: tokens.TypeService}); !errors.Is(err, apperr.Validation) {
			t.Errorf("long tenant: %v", err)
		}
		if n := testredis.KeyCount(t, s, prefix); n != 0 {
			t.Fatalf("refused requests wrote %d keys", n)
		}
		out, err := svc.Issue(ctx, bearer(auth.ScopeTokensWrite, auth.ScopeQuotesRead), ok)
		if err != nil || out.TokenID == "" || out.Token == "" || len(out.Scopes) != 1 {
			t.Fatalf("issue = %+v, %v", out, err)
		}
		claims, err := e.auth.Verify(out.Token)
		if err != nil || claims.ID != out.TokenID || claims.Tenant != "acme" || claims.Subject != "svc-a" ||
			claims.Scope != auth.ScopeQuotesRead || claims.TokenType != tokens.TypeService || !claims.ExpiresAt.Equal(out.ExpiresAt) {
			t.Fatalf("claims = %+v, %v", claims, err)
		}
	})
}

func TestIntrospect(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		svc := e.service(t, s, nil, tokens.Options{CacheTTL: 5 * time.Second})
		must := func(out tokens.Issued, err error) tokens.Issued {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		live := must(svc.Mint(ctx, mintReq(auth.ScopeTokensRead)))
		revoked := must(svc.Mint(ctx, mintReq(auth.ScopeTokensRead)))
		if _, err := svc.Revoke(ctx, admin, revoked.TokenID, "x"); err != nil {
			t.Fatal(err)
		}
		foreign := must(svc.Mint(ctx, tokens.MintRequest{Tenant: "other", Subject: "svc-b", Scopes: []string{"tokens:read"}, TTL: time.Hour, TokenType: tokens.TypeUser}))
		unknown := testauth.Mint(t, e.auth, "acme", "tokens:read")
		in, err := svc.Introspect(ctx, admin, live.Token)
		if err != nil || !in.Active || in.TokenID != live.TokenID || in.Tenant != "acme" || in.Subject != "svc-a" ||
			in.Scope != "tokens:read" || in.TokenType != tokens.TypeService || in.ExpiresAt != live.ExpiresAt.Unix() || in.IssuedAt == 0 || in.Issuer != testauth.Issuer {
			t.Fatalf("introspect live = %+v, %v", in, err)
		}
		// Expired: the live token (metadata present, one hour long) seen by a gateway whose
		// clock is two hours ahead.
		later := func() time.Time { return time.Now().Add(2 * time.Hour) }
		future := testauth.New(t, auth.Options{Keys: e.keys, Now: later})
		ahead := e
		ahead.auth = future
		if in, err := ahead.service(t, s, nil, tokens.Options{CacheTTL: 5 * time.Second, Now: later}).Introspect(ctx, admin, live.Token); err != nil || in != (tokens.Introspection{}) {
			t.Errorf("expired: %+v, %v", in, err)
		}
		// The live token with one character of its signature changed.
		sig := live.Token[strings.LastIndexByte(live.Token, '.')+1:]
		flip := map[byte]byte{'A': 'B'}[sig[0]]
		if flip == 0 {
			flip = 'A'
		}
		tampered := live.Token[:len(live.Token)-len(sig)] + string(flip) + sig[1:]
		for name, tok := range map[string]string{"revoked": revoked.Token, "other tenant": foreign.Token, "unknown": unknown,
			"garbage": "not a token", "empty": "", "huge": strings.Repeat("a", 10<<10), "bad signature": tampered} {
			in, err := svc.Introspect(ctx, admin, tok)
			if err != nil || in != (tokens.Introspection{}) {
				t.Errorf("%s: %+v, %v", name, in, err)
			}
		}
	})
}

func TestSpansCarryTokenIDAndMetricsCount(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	e := newEnv(t, testredis.Prefix(t))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	svc := e.service(t, s, nil, tokens.Options{Tracer: tp.Tracer("tokens"), Meter: mp.Meter("tokens")})
	ctx := context.Background()
	out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
	if err != nil {
		t.Fatal(err)
	}
	claims, _ := e.auth.Verify(out.Token)
	for range 2 {
		if err := svc.Check(ctx, claims); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Introspect(ctx, admin, out.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Revoke(ctx, admin, out.TokenID, "done"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(ctx, claims); !errors.Is(err, apperr.InvalidCredentials) {
		t.Fatalf("check after revoke: %v", err)
	}
	sig := out.Token[strings.LastIndex(out.Token, ".")+1:] // the secret part of the token
	names := map[string]bool{}
	for _, sp := range rec.Ended() {
		names[sp.Name()] = true
		var id string
		for _, a := range sp.Attributes() {
			if strings.Contains(a.Value.String(), sig) {
				t.Fatalf("span %s carries the token", sp.Name())
			}
			if a.Key == "hashgate.token.id" {
				id = a.Value.AsString()
			}
		}
		for _, ev := range sp.Events() {
			for _, a := range ev.Attributes {
				if strings.Contains(a.Value.String(), sig) {
					t.Fatalf("span %s event carries the token", sp.Name())
				}
			}
		}
		if id != out.TokenID {
			t.Errorf("span %s has token id %q, want %q", sp.Name(), id, out.TokenID)
		}
	}
	for _, n := range []string{"tokens.issue", "tokens.check", "tokens.introspect", "tokens.revoke"} {
		if !names[n] {
			t.Errorf("no %s span", n)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					key := m.Name
					for _, kv := range p.Attributes.ToSlice() {
						key += "," + string(kv.Key) + "=" + kv.Value.String()
					}
					sums[key] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sums[m.Name] += int64(p.Count)
				}
			}
		}
	}
	want := map[string]int64{
		"hashgate_tokens_issued,token_type=service":       1,
		"hashgate_tokens_revoked,outcome=revoked":         1,
		"hashgate_tokens_introspected,active=true":        1,
		"hashgate_tokens_revoked_rejected":                1,
		"hashgate_tokens_check_duration":                  3,
		"hashgate_tokens_check_cache_lookups,result=hit":  0, // embedded: no client cache
		"hashgate_tokens_check_cache_lookups,result=miss": 4,
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, sums[k], v, sums)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	e := newEnv(t, "p")
	r, err := tokenstore.New(s, tokenstore.Options{Prefix: "p", Hasher: e.hasher})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() (*tokens.Service, error){
		"no authority": func() (*tokens.Service, error) { return tokens.New(nil, r, tokens.Options{MaxTTL: time.Hour}) },
		"no store":     func() (*tokens.Service, error) { return tokens.New(e.auth, nil, tokens.Options{MaxTTL: time.Hour}) },
		"short max":    func() (*tokens.Service, error) { return tokens.New(e.auth, r, tokens.Options{MaxTTL: time.Second}) },
		"neg cache": func() (*tokens.Service, error) {
			return tokens.New(e.auth, r, tokens.Options{MaxTTL: time.Hour, CacheTTL: -1})
		},
	} {
		if _, err := f(); !errors.Is(err, tokens.ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	svc, err := tokens.New(e.auth, r, tokens.Options{MaxTTL: time.Hour, CacheTTL: time.Hour})
	if err != nil || tokens.CacheTTL(svc) != tokens.MaxCacheTTL {
		t.Fatalf("cache TTL not capped: %v, %v", svc, err)
	}
}

// The cache TTL bounds staleness even when no invalidation push arrives: once it passes, the
// next check reads Redis again.
func TestCachedCheckExpiresAfterCacheTTL(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side caching on this backend")
		}
		ctx := context.Background()
		e := newEnv(t, prefix)
		c := testredis.NewCounter(s.Client)
		const cacheTTL = 300 * time.Millisecond
		svc := e.service(t, s, c, tokens.Options{CacheTTL: cacheTTL})
		out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
		if err != nil {
			t.Fatal(err)
		}
		claims, err := e.auth.Verify(out.Token)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := svc.Check(ctx, claims); err != nil {
				t.Fatal(err)
			}
		}
		before := c.Sent()
		time.Sleep(cacheTTL + 200*time.Millisecond)
		if err := svc.Check(ctx, claims); err != nil {
			t.Fatal(err)
		}
		if c.Sent() == before {
			t.Fatalf("a check %v after caching still answered from the cache (TTL %v)", cacheTTL+200*time.Millisecond, cacheTTL)
		}
	})
}

// Read-your-writes: once this gateway's revoke has returned, its own next check refuses the
// token, even though the invalidation push for the revocation may not have arrived yet.
func TestRevokedTokenRefusedAtOnceBySameGateway(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		if !s.Caps.ClientCache {
			t.Skip("no client-side cache on this backend")
		}
		ctx := context.Background()
		e := newEnv(t, prefix)
		svc := e.service(t, s, nil, tokens.Options{CacheTTL: time.Minute})
		for i := range 30 {
			out, err := svc.Mint(ctx, mintReq(auth.ScopeTokensRead))
			if err != nil {
				t.Fatal(err)
			}
			claims, err := e.auth.Verify(out.Token)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := svc.Check(ctx, claims); err != nil {
					t.Fatalf("check: %v", err)
				}
			}
			if _, err := svc.Revoke(ctx, admin, out.TokenID, "test"); err != nil {
				t.Fatal(err)
			}
			if err := svc.Check(ctx, claims); !errors.Is(err, apperr.InvalidCredentials) {
				t.Fatalf("round %d: the check right after the revoke answered %v, want a refusal", i, err)
			}
		}
	})
}

// Custom scopes: a root token (tokens:admin) grants any, a token holding one grants it on, and
// the minted JWT carries it beside the built-in ones; tokens:admin stays unmintable.
func TestIssueCustomScopes(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		e := newEnv(t, prefix)
		svc := e.service(t, s, nil, tokens.Options{MaxTTL: 24 * time.Hour})
		req := tokens.IssueRequest{Subject: "svc-orders", Scopes: []string{auth.ScopeQuotesRead, "orders:write", "billing-v2:read.all"}, TTL: time.Hour, TokenType: tokens.TypeService}
		out, err := svc.Issue(ctx, admin, req)
		if err != nil {
			t.Fatalf("root grants custom scopes: %v", err)
		}
		claims, err := e.auth.Verify(out.Token)
		if err != nil || claims.Scope != "quotes:read orders:write billing-v2:read.all" {
			t.Fatalf("claims = %+v, %v", claims, err)
		}
		holder := bearer(auth.ScopeTokensWrite, "orders:write")
		if _, err := svc.Issue(ctx, holder, tokens.IssueRequest{Subject: "svc-sub", Scopes: []string{"orders:write"}, TTL: time.Hour, TokenType: tokens.TypeService}); err != nil {
			t.Fatalf("a holder grants its custom scope: %v", err)
		}
		if _, err := svc.Issue(ctx, holder, tokens.IssueRequest{Subject: "svc-sub", Scopes: []string{"orders:read"}, TTL: time.Hour, TokenType: tokens.TypeService}); !errors.Is(err, apperr.InsufficientScope) {
			t.Fatalf("a custom scope the caller lacks: %v, want insufficient-scope", err)
		}
		if _, err := svc.Issue(ctx, admin, tokens.IssueRequest{Subject: "svc-sub", Scopes: []string{auth.ScopeTokensAdmin}, TTL: time.Hour, TokenType: tokens.TypeService}); !errors.Is(err, apperr.Validation) {
			t.Fatalf("tokens:admin minted: %v", err)
		}
	})
}
