package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/quotes"
	"github.com/hashgate/hashgate/internal/repo/idemstore"
	"github.com/hashgate/hashgate/internal/testredis"
)

// eachBackendHarness runs fn on a wired harness per backend, in parallel.
func eachBackendHarness(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Helper()
	for _, b := range testredis.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, newHarness(t, b, nil))
		})
	}
}

const mergePatch = "application/merge-patch+json"

var quoteBody = map[string]any{"customerId": "cust-7", "salesChannel": "web", "currency": "EUR"}

type quoteJSON struct {
	QuoteId       string `json:"quoteId"`
	Status        string `json:"status"`
	SubtotalMinor int64  `json:"subtotalMinor"`
	DiscountMinor int64  `json:"discountMinor"`
	TaxMinor      int64  `json:"taxMinor"`
	TotalMinor    int64  `json:"totalMinor"`
	ItemCount     int    `json:"itemCount"`
	StateVersion  int64  `json:"stateVersion"`
	TenantId      string `json:"tenantId"`
}

func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
}

func createQuote(t *testing.T, h *harness, auth string) quoteJSON {
	t.Helper()
	rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth)
	wantStatus(t, rec, 201)
	var q quoteJSON
	decode(t, rec, &q)
	return q
}

func TestQuoteHTTPFlow(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write")
		rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth, "Idempotency-Key", "create-quote-0001")
		wantStatus(t, rec, 201)
		var q quoteJSON
		decode(t, rec, &q)
		if rec.Header().Get("ETag") != `"1"` || rec.Header().Get("Location") != "/v1/quotes/"+q.QuoteId ||
			q.Status != "DRAFT" || q.TenantId != "acme" || rec.Header().Get("Idempotent-Replayed") != "" {
			t.Fatalf("create: %v %s", rec.Header(), rec.Body)
		}
		// The replay is the first response, byte for byte, marked as replayed.
		again := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth, "Idempotency-Key", "create-quote-0001")
		wantStatus(t, again, 201)
		if !bytes.Equal(again.Body.Bytes(), rec.Body.Bytes()) || again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Header().Get("ETag") != `"1"` || again.Header().Get("Location") != rec.Header().Get("Location") {
			t.Fatalf("replay differs:\n%s\n%s %v", rec.Body, again.Body, again.Header())
		}
		other := map[string]any{"customerId": "cust-8", "salesChannel": "web", "currency": "EUR"}
		wantProblem(t, h.do("POST", "/v1/quotes", other, "Authorization", auth, "Idempotency-Key", "create-quote-0001"), 422, "idempotency-key-reused")

		path := "/v1/quotes/" + q.QuoteId
		rec = h.do("GET", path, nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		if rec.Header().Get("ETag") != `"1"` {
			t.Fatalf("get ETag %q", rec.Header().Get("ETag"))
		}
		item := map[string]any{"sku": "SKU-1", "quantity": 3, "unitPriceMinor": 1250, "description": "widget"}
		wantProblem(t, h.do("PUT", path+"/items/a", item, "Authorization", auth), 428, "precondition-required")
		rec = h.do("PUT", path+"/items/a", item, "Authorization", auth, "If-Match", `"1"`)
		wantStatus(t, rec, 200)
		decode(t, rec, &q)
		if q.SubtotalMinor != 3750 || q.TotalMinor != 3750 || rec.Header().Get("ETag") != `"2"` {
			t.Fatalf("put item: %+v %v", q, rec.Header())
		}
		patch := `{"discountMinor":750,"taxMinor":600}`
		wantProblem(t, h.do("PATCH", path, patch, "Authorization", auth, "If-Match", `"2"`), 415, "unsupported-media-type")
		wantProblem(t, h.do("PATCH", path, patch, "Authorization", auth, "Content-Type", mergePatch), 428, "precondition-required")
		wantProblem(t, h.do("PATCH", path, patch, "Authorization", auth, "Content-Type", mergePatch, "If-Match", `"1"`), 412, "precondition-failed")
		rec = h.do("PATCH", path, patch, "Authorization", auth, "Content-Type", mergePatch, "If-Match", `"2"`)
		wantStatus(t, rec, 200)
		decode(t, rec, &q)
		if q.TotalMinor != 3750-750+600 || q.StateVersion != 3 || rec.Header().Get("ETag") != `"3"` {
			t.Fatalf("patch: %+v", q)
		}
		rec = h.do("GET", path+"/items", nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		var list struct {
			Items []struct {
				ItemId         string `json:"itemId"`
				LineTotalMinor int64  `json:"lineTotalMinor"`
			} `json:"items"`
			StateVersion int64 `json:"stateVersion"`
		}
		decode(t, rec, &list)
		if len(list.Items) != 1 || list.Items[0].LineTotalMinor != 3750 || list.StateVersion != 3 || rec.Header().Get("ETag") != `"3"` {
			t.Fatalf("items: %s", rec.Body)
		}
		rec = h.do("POST", path+"/submit", nil, "Authorization", auth, "If-Match", `"3"`)
		wantStatus(t, rec, 200)
		decode(t, rec, &q)
		if q.Status != "SUBMITTED" {
			t.Fatalf("submit: %s", rec.Body)
		}
		// Any edit after submission is a conflict.
		wantProblem(t, h.do("PATCH", path, `{"taxMinor":1}`, "Authorization", auth, "Content-Type", mergePatch, "If-Match", `"4"`), 409, "invalid-status")
		wantProblem(t, h.do("PUT", path+"/items/b", item, "Authorization", auth, "If-Match", `"4"`), 409, "invalid-status")
		wantProblem(t, h.do("DELETE", path+"/items/a", nil, "Authorization", auth, "If-Match", `"4"`), 409, "invalid-status")
		wantProblem(t, h.do("POST", path+"/submit", nil, "Authorization", auth, "If-Match", `"4"`), 409, "invalid-status")
		// Another tenant learns nothing and changes nothing.
		stranger := h.bearer("globex", "quotes:read", "quotes:write")
		wantProblem(t, h.do("GET", path, nil, "Authorization", stranger), 404, "not-found")
		wantStatus(t, h.do("DELETE", path, nil, "Authorization", stranger), 204)
		wantStatus(t, h.do("GET", path, nil, "Authorization", auth), 200)
		wantStatus(t, h.do("DELETE", path, nil, "Authorization", auth), 204)
		wantProblem(t, h.do("GET", path, nil, "Authorization", auth), 404, "not-found")
		wantStatus(t, h.do("DELETE", path, nil, "Authorization", auth), 204)
		requireKeysHaveTTL(t, h)
	})
}

// TestQuoteHTTPBadInput: every bad input is a clear 4xx problem, never a 5xx.
func TestQuoteHTTPBadInput(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write")
		q := createQuote(t, h, auth)
		path := "/v1/quotes/" + q.QuoteId
		v := 1
		for i := range 100 {
			rec := h.do("PUT", fmt.Sprintf("%s/items/i%03d", path, i), map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": 100},
				"Authorization", auth, "If-Match", fmt.Sprintf(`"%d"`, v))
			wantStatus(t, rec, 200)
			v++
		}
		etag := fmt.Sprintf(`"%d"`, v)
		item := map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": 1}
		tests := []struct {
			name, method, path string
			body               any
			headers            []string
			status             int
			slug               string
		}{
			{"101st item", "PUT", path + "/items/i100", item, []string{"If-Match", etag}, 422, "bound-exceeded"},
			{"negative quantity", "PUT", path + "/items/i000", map[string]any{"sku": "S", "quantity": -1, "unitPriceMinor": 1}, []string{"If-Match", etag}, 400, "validation"},
			{"zero quantity", "PUT", path + "/items/i000", map[string]any{"sku": "S", "quantity": 0, "unitPriceMinor": 1}, []string{"If-Match", etag}, 400, "validation"},
			{"negative price", "PUT", path + "/items/i000", map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": -5}, []string{"If-Match", etag}, 400, "validation"},
			{"price beyond 2^53", "PUT", path + "/items/i000", map[string]any{"sku": "S", "quantity": 1, "unitPriceMinor": int64(1) << 60}, []string{"If-Match", etag}, 400, "validation"}, // the contract bounds amounts at 2^53 − 1,
			{"unknown currency", "POST", "/v1/quotes", map[string]any{"customerId": "c", "salesChannel": "web", "currency": "XYZ"}, nil, 422, "unprocessable"},
			{"lower-case currency", "POST", "/v1/quotes", map[string]any{"customerId": "c", "salesChannel": "web", "currency": "eur"}, nil, 400, "validation"},
			{"malformed ETag", "PUT", path + "/items/i000", item, []string{"If-Match", "7"}, 400, "validation"},
			{"ETag list", "PUT", path + "/items/i000", item, []string{"If-Match", `"1", "2"`}, 400, "validation"},
			{"weak ETag", "PUT", path + "/items/i000", item, []string{"If-Match", fmt.Sprintf(`W/%s`, etag)}, 412, "precondition-failed"},
			{"foreign ETag", "PUT", path + "/items/i000", item, []string{"If-Match", `"abc"`}, 412, "precondition-failed"},
			{"no If-Match", "PUT", path + "/items/i000", item, nil, 428, "precondition-required"},
			{"wrong content type", "PUT", path + "/items/i000", "sku=S", []string{"If-Match", etag, "Content-Type", "text/plain"}, 415, "unsupported-media-type"},
			{"patch as JSON", "PATCH", path, `{"taxMinor":1}`, []string{"If-Match", etag}, 415, "unsupported-media-type"},
			{"discount above subtotal", "PATCH", path, `{"discountMinor":10001}`, []string{"If-Match", etag, "Content-Type", mergePatch}, 422, "unprocessable"},
			{"patch null", "PATCH", path, `{"taxMinor":null}`, []string{"If-Match", etag, "Content-Type", mergePatch}, 400, "validation"},
			{"empty patch", "PATCH", path, `{}`, []string{"If-Match", etag, "Content-Type", mergePatch}, 400, "validation"},
			{"unknown field", "PATCH", path, `{"status":"SUBMITTED"}`, []string{"If-Match", etag, "Content-Type", mergePatch}, 400, "validation"},
			{"bad item id", "PUT", path + "/items/a%7Bb%7D", item, []string{"If-Match", etag}, 400, "validation"},
			{"bad quote id", "GET", "/v1/quotes/q_{x}", nil, nil, 400, "validation"},
			{"unknown quote", "GET", "/v1/quotes/" + quotes.NewID(), nil, nil, 404, "not-found"},
			{"unknown item", "DELETE", path + "/items/nope", nil, []string{"If-Match", etag}, 404, "not-found"},
			{"short Idempotency-Key", "POST", "/v1/quotes", quoteBody, []string{"Idempotency-Key", "short"}, 400, "validation"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := h.do(tt.method, tt.path, tt.body, append([]string{"Authorization", auth}, tt.headers...)...)
				wantProblem(t, rec, tt.status, tt.slug)
			})
		}
		// None of the refusals changed the draft.
		rec := h.do("GET", path, nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		decode(t, rec, &q)
		if q.StateVersion != int64(v) || q.ItemCount != 100 || q.SubtotalMinor != 10_000 {
			t.Fatalf("after refusals: %+v", q)
		}
		requireKeysHaveTTL(t, h)
	})
}

// TestQuoteHTTPConcurrentPatch: 64 PATCHes with the same If-Match → one 200, the rest 412.
func TestQuoteHTTPConcurrentPatch(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "quotes:read", "quotes:write")
		q := createQuote(t, h, auth)
		codes := make([]int, 64)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				rec := h.do("PATCH", "/v1/quotes/"+q.QuoteId, fmt.Sprintf(`{"taxMinor":%d}`, i),
					"Authorization", auth, "Content-Type", mergePatch, "If-Match", `"1"`)
				codes[i] = rec.Code
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, c := range codes {
			count[c]++
		}
		if count[200] != 1 || count[412] != 63 {
			t.Fatalf("status counts %v", count)
		}
		rec := h.do("GET", "/v1/quotes/"+q.QuoteId, nil, "Authorization", auth)
		if rec.Header().Get("ETag") != `"2"` {
			t.Fatalf("final ETag %q", rec.Header().Get("ETag"))
		}
	})
}

// TestQuoteHTTPInFlight: a retry while the first request holds the key is 409 with Retry-After.
func TestQuoteHTTPInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	auth := h.bearer("acme", "quotes:write")
	canonical, _ := json.Marshal(QuoteCreateRequest{CustomerId: "cust-7", SalesChannel: "web", Currency: "EUR"})
	idem, err := idemstore.New(h.store, idemstore.Options{Prefix: h.prefix, Hasher: h.hasher, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = idem.Claim(context.Background(), idempotency.Scope{Tenant: "acme", Operation: "createQuote", Key: "in-flight-key-1"},
		idempotency.RequestHash("createQuote", canonical), quotes.NewID())
	if err != nil {
		t.Fatal(err)
	}
	rec := h.do("POST", "/v1/quotes", quoteBody, "Authorization", auth, "Idempotency-Key", "in-flight-key-1")
	wantProblem(t, rec, 409, "request-in-flight")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("409 in flight without Retry-After")
	}
}

// TestQuotePatchBindsMergePatch isolates the one thing PATCH needs from the stack: a body sent
// as application/merge-patch+json (the only type the contract allows) must reach the handler.
func TestQuotePatchBindsMergePatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	auth := h.bearer("acme", "quotes:read", "quotes:write")
	q := createQuote(t, h, auth)
	rec := h.do("PATCH", "/v1/quotes/"+q.QuoteId, `{"taxMinor":5}`, "Authorization", auth, "Content-Type", mergePatch, "If-Match", `"1"`)
	if rec.Code == http.StatusUnsupportedMediaType {
		t.Fatalf("merge-patch body refused before the handler (Echo's binder only decodes application/json): " +
			"the validator must keep the value it validated (openapi3filter KeepValidatedValue) on the request the handler binds")
	}
	wantStatus(t, rec, 200)
	decode(t, rec, &q)
	if q.TaxMinor != 5 || q.TotalMinor != 5 {
		t.Fatalf("patched %+v", q)
	}
}

// requireKeysHaveTTL scans every node for the harness's keys: each must have a TTL.
func requireKeysHaveTTL(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	seen := 0
	for addr, node := range h.store.Client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(h.prefix+":*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan %s: %v", addr, err)
			}
			for _, k := range e.Elements {
				seen++
				if ttl, err := node.Do(ctx, node.B().Pttl().Key(k).Build()).AsInt64(); err != nil || ttl <= 0 {
					t.Errorf("key %s: PTTL %d %v", strings.TrimPrefix(k, h.prefix), ttl, err)
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	if seen == 0 {
		t.Fatal("no keys found: the scan is not looking where the repositories write")
	}
}
