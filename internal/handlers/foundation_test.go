package handlers

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
)

var allScopes = auth.KnownScopes()

func embedded(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, testredis.Backends()[0], nil)
}

func TestMetaEndpoints(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	if rec := h.do("GET", "/healthz", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ok"`) {
		t.Fatalf("healthz: %d %s", rec.Code, rec.Body)
	}
	// The API port's readiness is the status alone: where Redis is and what it runs are the
	// operator listener's (internal/app).
	rec := h.do("GET", "/readyz", nil)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("readyz: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/openapi.yaml", nil); rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "openapi:") {
		t.Fatalf("openapi: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("GET", "/.well-known/jwks.json", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"kty":"OKP"`) || strings.Contains(rec.Body.String(), `"d"`) {
		t.Fatalf("jwks: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/metrics", nil); rec.Code != 404 {
		t.Fatalf("metrics on the API port: %d", rec.Code)
	}
}

// specOperation is one operation of the spec with its path's parameters filled in.
type specOperation struct {
	method, path, url string
	op                *openapi3.Operation
	secured           bool // it has security requirements (its own, else the document's)
}

// specOperations lists every operation of the spec.
func specOperations(t *testing.T) []specOperation {
	t.Helper()
	spec, err := GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	fill := regexp.MustCompile(`\{[^}]+\}`)
	ids := map[string]string{
		"{sessionId}": "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB", "{userId}": "alice", "{tokenId}": "01hzzzzzzzzzzzzzzzzzzzzzzz",
		"{quoteId}": "q_01hzzzzzzzzzzzzzzzzzzzzzzz", "{itemId}": "item-1", "{caseId}": "c_01hzzzzzzzzzzzzzzzzzzzzzzz",
		"{webhookId}": "wh_01hzzzzzzzzzzzzzzzzzzzzzzz",
	}
	var ops []specOperation
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			security := spec.Security
			if op.Security != nil {
				security = *op.Security
			}
			url := fill.ReplaceAllStringFunc(path, func(s string) string { return ids[s] })
			ops = append(ops, specOperation{method: method, path: path, url: url, op: op, secured: len(security) > 0})
		}
	}
	return ops
}

func TestEveryPathIsRouted(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	bearer := h.bearer("acme", allScopes...)
	for _, o := range specOperations(t) {
		rec := h.do(o.method, o.url, nil, "Authorization", bearer)
		// Every operation is built: anything but "no route" or a 5xx.
		if rec.Code == http.StatusNotFound && strings.Contains(rec.Body.String(), "No route") || rec.Code == http.StatusMethodNotAllowed {
			t.Errorf("%s %s is not routed: %d %s", o.method, o.path, rec.Code, rec.Body)
		}
		if rec.Code >= 500 {
			t.Errorf("%s %s: %d %s", o.method, o.path, rec.Code, rec.Body)
		}
	}
}

// Handlers take their caller from the context without checking (caller): the authentication
// middleware must refuse every request to an operation with security requirements before its
// handler runs, and the public operations must answer without asking for one (caller panics
// there: a 500).
func TestNoHandlerRunsWithoutItsCaller(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	public := 0
	for _, o := range specOperations(t) {
		var body any
		if o.op.RequestBody != nil {
			body = map[string]any{}
		}
		rec := h.do(o.method, o.url, body)
		switch {
		case o.secured && rec.Code != http.StatusUnauthorized:
			t.Errorf("%s %s without credentials: %d %s, want 401 before the handler", o.method, o.path, rec.Code, rec.Body)
		case !o.secured && rec.Code >= 500:
			t.Errorf("%s %s (public): %d %s", o.method, o.path, rec.Code, rec.Body)
		case !o.secured:
			public++
		}
	}
	if public == 0 {
		t.Fatal("no public operation tried")
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	wantProblem(t, h.do("GET", "/nope", nil), 404, "not-found")
	wantProblem(t, h.do("PUT", "/healthz", nil), 405, "method-not-allowed")
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	// A token minted two hours ago with a one-minute lifetime: expired well past the leeway.
	past := testauth.New(t, auth.Options{Keys: h.auth.Keys(), Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }})
	expired, _, err := past.Mint(auth.MintInput{Subject: "x", Tenant: "acme", Scopes: allScopes, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	forged := testauth.Mint(t, testauth.New(t, auth.Options{}), "acme", allScopes...)
	tests := []struct {
		name   string
		header string
		status int
		slug   string
	}{
		{"none", "", 401, "unauthenticated"},
		{"made up", "Bearer not.a.jwt", 401, "invalid-credentials"},
		{"basic scheme", "Basic dXNlcjpwYXNz", 401, "invalid-credentials"},
		{"other key", "Bearer " + forged, 401, "invalid-credentials"},
		{"huge", "Bearer " + strings.Repeat("a", 10000), 401, "invalid-credentials"},
		{"expired", "Bearer " + expired, 401, "invalid-credentials"},
		{"missing scope", h.bearer("acme", "quotes:read"), 403, "insufficient-scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do("GET", "/v1/tokens", nil, "Authorization", tt.header)
			p := wantProblem(t, rec, tt.status, tt.slug)
			if tt.status == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			if strings.Contains(p.Detail, "not.a.jwt") {
				t.Fatal("problem echoes the token")
			}
			if tt.name == "expired" && !strings.Contains(p.Detail, "expired") {
				t.Fatalf("expired token refused for another reason: %q", p.Detail)
			}
		})
	}
}

func TestValidationNamesTheField(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	bearer := h.bearer("acme", allScopes...)
	rec := h.do("POST", "/v1/quotes", map[string]any{"customerId": "c1", "salesChannel": "web", "currency": "euro", "extra": 1},
		"Authorization", bearer)
	p := wantProblem(t, rec, 400, "validation")
	joined := ""
	for _, e := range p.Errors {
		joined += e.Pointer + " "
	}
	if !strings.Contains(joined, "/currency") {
		t.Fatalf("errors do not name /currency: %+v", p)
	}
	wantProblem(t, h.do("POST", "/v1/quotes", `{"customerId":`, "Authorization", bearer), 400, "validation")
	wantProblem(t, h.do("POST", "/v1/quotes", "customerId=x", "Authorization", bearer, "Content-Type", "text/plain"), 415, "unsupported-media-type")
	// Path parameters are validated too.
	p = wantProblem(t, h.do("GET", "/v1/quotes/not-an-id", nil, "Authorization", bearer), 400, "validation")
	if len(p.Errors) == 0 || !strings.Contains(p.Errors[0].Parameter, "quoteId") {
		t.Fatalf("errors do not name quoteId: %+v", p)
	}
	// Unauthenticated requests are refused before the body is judged.
	wantProblem(t, h.do("POST", "/v1/quotes", `{"customerId":`), 401, "unauthenticated")
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	big := `{"customerId":"` + strings.Repeat("a", 70<<10) + `"}`
	wantProblem(t, h.do("POST", "/v1/quotes", big, "Authorization", h.bearer("acme", allScopes...)), 413, "payload-too-large")
}

func TestRedisDownIs503WithRetryAfter(t *testing.T) {
	t.Parallel()
	b := testredis.Backends()[0]
	s := testredis.Open(t, b)
	h := newHarnessOn(t, s, testredis.Prefix(t), nil, nil)
	s.Close() // the embedded server stops: every call now fails at once
	start := time.Now()
	rec := h.do("GET", "/readyz", nil)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("readyz took %v", d)
	}
	wantProblem(t, rec, 503, "unavailable")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
