package handlers

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// limitedHarness is a gateway whose request-rate limits are small enough to reach.
func limitedHarness(t *testing.T, b testredis.Backend, perToken, perTenant, perSession string) *harness {
	t.Helper()
	return newHarnessWith(t, testredis.Open(t, b), TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) {
		c.RateLimitPerToken, c.RateLimitPerTenant, c.RateLimitPerSession = perToken, perTenant, perSession
	}}, nil)
}

// Every answer of a limited operation carries RateLimit-Policy and RateLimit for the token and
// its tenant — a 200, a 404 and a 400 alike — until the token's limit, then 429 with
// Retry-After; another token of the tenant still passes, until the tenant's limit.
func TestRateLimitPerTokenAndTenant(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, _ *store.Store, _ string) {
		h := limitedHarness(t, b, "4/1m", "6/1m", "0")
		a := h.bearer("acme", "quotes:read", "quotes:write")
		created := h.do("POST", "/v1/quotes", quoteBody, "Authorization", a)
		var q quoteJSON
		decode(t, created, &q)
		answers := []*httptest.ResponseRecorder{
			created,
			h.do("GET", "/v1/quotes/"+q.QuoteId, nil, "Authorization", a),
			h.do("POST", "/v1/quotes", map[string]any{"currency": "nope"}, "Authorization", a),
			h.do("GET", "/v1/quotes/q_doesnotexist0000000000000", nil, "Authorization", a),
		}
		for i, rec := range answers {
			pol, rl := rec.Header().Get("RateLimit-Policy"), rec.Header().Get("RateLimit")
			if rec.Code != []int{201, 200, 400, 400}[i] || pol != `"token";q=4;w=60, "tenant";q=6;w=60` ||
				!strings.HasPrefix(rl, `"token";r=`+strconv.Itoa(3-i)+`;t=`) || !strings.Contains(rl, `, "tenant";r=`+strconv.Itoa(5-i)+`;t=`) {
				t.Fatalf("answer %d: %d RateLimit-Policy %q RateLimit %q", i, rec.Code, pol, rl)
			}
		}
		rec := h.do("GET", "/v1/quotes/q_doesnotexist0000000000000", nil, "Authorization", a)
		p := wantProblem(t, rec, http.StatusTooManyRequests, "rate-limited")
		if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 || ra > 60 ||
			!strings.HasPrefix(rec.Header().Get("RateLimit"), `"token";r=0;t=`) || !strings.Contains(p.Detail, "token") {
			t.Fatalf("429: Retry-After %q RateLimit %q detail %q", rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit"), p.Detail)
		}
		// Another token of the tenant: two requests left for the tenant, then its limit.
		other := h.bearer("acme", "quotes:read")
		for i := range 2 {
			if rec := h.do("GET", "/v1/quotes/"+q.QuoteId, nil, "Authorization", other); rec.Code != http.StatusOK {
				t.Fatalf("other token, request %d: %d", i, rec.Code)
			}
		}
		rec = h.do("GET", "/v1/quotes/q_doesnotexist0000000000000", nil, "Authorization", other)
		if p := wantProblem(t, rec, http.StatusTooManyRequests, "rate-limited"); !strings.Contains(p.Detail, "tenant") {
			t.Fatalf("tenant refusal: %q", p.Detail)
		}
		// Another tenant is untouched.
		if rec := h.do("GET", "/v1/quotes/"+q.QuoteId, nil, "Authorization", h.bearer("globex", "quotes:read")); rec.Code != http.StatusNotFound {
			t.Fatalf("another tenant: %d", rec.Code)
		}
	})
}

// The forward-auth routes and the meta endpoints are never limited and carry no RateLimit
// fields; the end user's other operations are limited per session.
func TestRateLimitExemptionsAndSessions(t *testing.T) {
	t.Parallel()
	h := limitedHarness(t, testredis.Backends()[0], "2/1m", "2/1m", "3/1m")
	admin := h.bearer("acme", "sessions:read", "sessions:write")
	tok := h.createSession("acme", "alice", nil).Token
	for i := range 10 {
		for _, rec := range []*httptest.ResponseRecorder{
			h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok),
			h.do("POST", "/v1/authorize", nil, "X-Session-Token", tok),
			h.do("GET", "/v1/session", nil, "X-Session-Token", tok),
			h.do("GET", "/v1/authorize", nil, "Authorization", admin),
			h.do("GET", "/healthz", nil),
			h.do("GET", "/readyz", nil),
		} {
			if rec.Code != http.StatusOK || rec.Header().Get("RateLimit") != "" || rec.Header().Get("RateLimit-Policy") != "" {
				t.Fatalf("round %d: %d RateLimit %q", i, rec.Code, rec.Header().Get("RateLimit"))
			}
		}
	}
	for i := range 3 {
		rec := h.do("GET", "/v1/session/devices", nil, "X-Session-Token", tok)
		if rec.Code != http.StatusOK || rec.Header().Get("RateLimit-Policy") != `"session";q=3;w=60` {
			t.Fatalf("devices %d: %d %q", i, rec.Code, rec.Header().Get("RateLimit-Policy"))
		}
	}
	wantProblem(t, h.do("GET", "/v1/session/devices", nil, "X-Session-Token", tok), http.StatusTooManyRequests, "rate-limited")
	// The session's own forward auth still passes.
	if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", tok); rec.Code != http.StatusOK {
		t.Fatalf("authorize after the session's limit: %d", rec.Code)
	}
}
