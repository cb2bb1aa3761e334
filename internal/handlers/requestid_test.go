package handlers

import (
	"net/http"
	"testing"
)

// Every answer carries an X-Request-Id: the caller's when it is short and plain, else one the
// gateway makes (unique per request); an unfit one never reaches the answer (or a log). Not
// found and method-not-allowed answers too (the middleware stack runs around every route).
func TestRequestID(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	for _, c := range []struct {
		method, path string
		code         int
	}{{"GET", "/healthz", http.StatusOK}, {"GET", "/v1/nope", http.StatusNotFound}, {"PUT", "/healthz", http.StatusMethodNotAllowed}} {
		rec := h.do(c.method, c.path, nil, "X-Request-Id", "caller-id_1.2:3")
		if rec.Code != c.code || rec.Header().Get("X-Request-Id") != "caller-id_1.2:3" {
			t.Fatalf("%s %s with a plain id: %d, X-Request-Id %q", c.method, c.path, rec.Code, rec.Header().Get("X-Request-Id"))
		}
		seen := map[string]bool{}
		for _, id := range []string{"", "bad id\r\nX-Evil: 1", "x{y}", string(make([]byte, 65))} {
			rec := h.do(c.method, c.path, nil, "X-Request-Id", id)
			got := rec.Header().Get("X-Request-Id")
			if rec.Code != c.code || !requestIDPattern.MatchString(got) || got == id || seen[got] || len(rec.Header()["X-Request-Id"]) != 1 {
				t.Fatalf("%s %s with id %q: %d, X-Request-Id %q (seen: %v)", c.method, c.path, id, rec.Code, rec.Header()["X-Request-Id"], seen)
			}
			seen[got] = true
		}
	}
}
