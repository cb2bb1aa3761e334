package handlers

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// FuzzProblemRenderer: whatever detail, path and extra members a refusal carries, the body is
// valid JSON with the kind's status and type, and the response carries that status.
func FuzzProblemRenderer(f *testing.F) {
	f.Add("quote q_1 is SUBMITTED", "/v1/quotes/q_1", "attemptsLeft", 3)
	f.Add("\xff\xfe invalid utf-8", "/\x00/..", "", 0)
	f.Add(strings.Repeat("x", 5000), strings.Repeat("/a", 400), "type", -1)
	s := newHarness(f, testredis.Backends()[0], nil).srv
	e := echo.New()
	kinds := []*apperr.Kind{apperr.Validation, apperr.NotFound, apperr.PreconditionFailed, apperr.RateLimited, apperr.Unavailable, apperr.Internal}
	f.Fuzz(func(t *testing.T, detail, path, extraKey string, extraVal int) {
		k := kinds[(len(detail)+len(path))%len(kinds)]
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		c := e.NewContext(req, rec)
		err := apperr.New(k, detail)
		if extraKey != "" {
			err = err.With(extraKey, extraVal)
		}
		s.HTTPErrorHandler(err, c)
		if rec.Code != k.Status {
			t.Fatalf("status %d, want %d", rec.Code, k.Status)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("body is not JSON: %v: %q", err, rec.Body.String())
		}
		if body["type"] != k.Type(s.PublicURL) || int(body["status"].(float64)) != k.Status {
			t.Fatalf("body %v", body)
		}
		if k == apperr.Internal && body["detail"] != nil {
			t.Fatalf("500 leaks a detail: %v", body)
		}
	})
}

// FuzzRequestDecoders sends arbitrary bodies to every operation that takes one, through the
// whole stack (validator and binder included): never a 5xx other than 503, never a panic,
// always a problem body on errors.
func FuzzRequestDecoders(f *testing.F) {
	targets := []struct{ method, path string }{
		{"POST", "/v1/sessions"}, {"POST", "/v1/sessions/s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB/mfa/verify"},
		{"POST", "/v1/tokens"}, {"POST", "/v1/tokens/introspect"}, {"POST", "/v1/quotes"},
		{"PATCH", "/v1/quotes/q_01hzzzzzzzzzzzzzzzzzzzzzzz"}, {"PUT", "/v1/quotes/q_01hzzzzzzzzzzzzzzzzzzzzzzz/items/i1"},
		{"POST", "/v1/cases"}, {"POST", "/v1/cases/c_01hzzzzzzzzzzzzzzzzzzzzzzz/escalate"},
		{"POST", "/v1/cases/c_01hzzzzzzzzzzzzzzzzzzzzzzz/assign"},
	}
	for i := range targets {
		f.Add(uint8(i), `{}`, "application/json")
		f.Add(uint8(i), `{"userId":"a","authLevel":"BASIC","device":{"label":"\ud800"}}`, "application/json")
		f.Add(uint8(i), `{"a":{"a":{"a":{"a":[[[[[[[[[[]]]]]]]]]]}}}}`, "application/merge-patch+json")
		f.Add(uint8(i), `{"token":"x","token":"y"}`, "application/x-www-form-urlencoded")
		f.Add(uint8(i), "\xff\xfe\x00", "text/plain")
	}
	h := newHarness(f, testredis.Backends()[0], nil)
	bearer := h.bearer("fuzz", allScopes...)
	f.Fuzz(func(t *testing.T, which uint8, body, contentType string) {
		tg := targets[int(which)%len(targets)]
		h.t = t
		rec := h.do(tg.method, tg.path, body, "Authorization", bearer, "Content-Type", contentType, "If-Match", `"1"`)
		if rec.Code >= 500 && rec.Code != 503 {
			t.Fatalf("%s %s with %q (%s): %d %s", tg.method, tg.path, body, contentType, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Fatalf("error without problem body: %d %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	})
}
