package handlers

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// GET /docs and its files: the page and every file it references answer 200 with their type,
// under the page's Content-Security-Policy; a revalidation with the ETag is a 304; any other
// name under /docs is a 404 problem. (Rendered in a real browser: cmd/gateway/docs_test.go.)
func TestDocsServesThePageAndItsFiles(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	page := h.do("GET", "/docs", nil)
	if page.Code != http.StatusOK || page.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /docs: %d %q", page.Code, page.Header().Get("Content-Type"))
	}
	if strings.Contains(page.Body.String(), "<script>") || strings.Contains(page.Body.String(), "http") {
		t.Fatalf("the page has an inline script or an absolute URL:\n%s", page.Body)
	}
	refs := regexp.MustCompile(`(?:src|href)="(docs/[^"]+)"`).FindAllStringSubmatch(page.Body.String(), -1)
	if len(refs) < 4 {
		t.Fatalf("the page references %d files", len(refs))
	}
	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".png": "image/png"}
	for _, r := range refs {
		rec := h.do("GET", "/"+r[1], nil)
		ext := r[1][strings.LastIndexByte(r[1], '.'):]
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != want[ext] || rec.Body.Len() == 0 {
			t.Errorf("GET /%s: %d %q (%d bytes)", r[1], rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET /%s: headers %v", r[1], rec.Header())
		}
		if etag := rec.Header().Get("ETag"); etag == "" {
			t.Errorf("GET /%s: no ETag", r[1])
		} else if again := h.do("GET", "/"+r[1], nil, "If-None-Match", etag); again.Code != http.StatusNotModified {
			t.Errorf("GET /%s with its ETag: %d", r[1], again.Code)
		}
	}
	for _, name := range []string{"index.html", "swagger-initializer.js", "swagger-ui-bundle.js.map", "..%2Fopenapi.yaml", "nope"} {
		wantProblem(t, h.do("GET", "/docs/"+name, nil), http.StatusNotFound, "not-found")
	}
	// /docs/ leads to the page, by a relative Location that holds behind a path prefix.
	if rec := h.do("GET", "/docs/", nil); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "../docs" {
		t.Errorf("GET /docs/: %d, Location %q", rec.Code, rec.Header().Get("Location"))
	}
}
