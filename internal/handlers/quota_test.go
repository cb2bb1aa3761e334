package handlers

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestTenantQuotaProblem: a create over a tenant quota answers 429 quota-exceeded with
// Retry-After, the problem names the quota and its limit, and nothing is written — for
// POST /v1/tokens (GATEWAY_TENANT_MAX_TOKENS), for a keyed POST /v1/quotes
// (GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS), and for POST /v1/quotes and POST /v1/cases without a key
// (GATEWAY_TENANT_MAX_QUOTES, GATEWAY_TENANT_MAX_CASES). The quotas' exactness under concurrency and their
// release on expiry are proven on every backend in internal/repo (quota_test.go).
func TestTenantQuotaProblem(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s := testredis.Open(t, b)
			h := newHarnessWith(t, s, TestGateway{Prefix: testredis.Prefix(t), Config: func(c *config.Config) {
				c.TenantMaxTokens, c.TenantMaxIdempotencyKeys, c.TenantMaxQuotes, c.TenantMaxCases = 2, 1, 2, 1
			}}, nil)
			auth := h.bearer("acme", "tokens:write", "quotes:write", "cases:write") // the tenant's first token
			// over sends the create twice (first, then second: extra headers of each) and wants the
			// second refused.
			over := func(path string, body any, quota string, limit int, first, second []string) {
				t.Helper()
				if rec := h.do("POST", path, body, append([]string{"Authorization", auth}, first...)...); rec.Code != 201 {
					t.Fatalf("POST %s under the quota: %d %s", path, rec.Code, rec.Body)
				}
				keys := testredis.KeyCount(t, s, h.prefix)
				rec := h.do("POST", path, body, append([]string{"Authorization", auth}, second...)...)
				wantProblem(t, rec, 429, "quota-exceeded")
				var p struct {
					Quota string `json:"quota"`
					Limit int    `json:"limit"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Quota != quota || p.Limit != limit {
					t.Fatalf("problem %s: want quota %q, limit %d", rec.Body, quota, limit)
				}
				if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 {
					t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
				}
				if n := testredis.KeyCount(t, s, h.prefix); n != keys {
					t.Fatalf("the refused create changed the key count from %d to %d", keys, n)
				}
			}
			over("/v1/tokens", tokenRequest(3600, "quotes:write"), "tokens", 2, nil, nil)
			over("/v1/quotes", quoteBody, "idempotency keys", 1,
				[]string{"Idempotency-Key", "quota-key-1"}, []string{"Idempotency-Key", "quota-key-2"})
			over("/v1/quotes", quoteBody, "quotes", 2, nil, nil) // the keyed one above is the first
			over("/v1/cases", caseBody(time.Now().Add(time.Hour)), "cases", 1, nil, nil)
		})
	}
}
