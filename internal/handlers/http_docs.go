package handlers

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	swaggerfiles "github.com/swaggo/files/v2"

	"github.com/hashgate/hashgate/internal/apperr"
)

// GET /docs is the contract's interactive reference: Swagger UI, whose distribution the
// github.com/swaggo/files/v2 module embeds (so it comes through the Go module proxy with the
// rest of the build, pinned in go.sum: no CDN, no npm step, works offline), started by
// docs/init.js on /openapi.yaml. Both operations are in the contract (getDocs, getDocsAsset)
// but served here, not by the generated server: the page and its files are not JSON.

//go:embed docs/index.html docs/init.js docs/hashgate.css
var docsOwn embed.FS

// docsCSP lets the page load and run only what this origin serves. Swagger UI's style sheet
// draws its icons from data: images, which cannot run code.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsFile is one file of the reference, read once at start.
type docsFile struct {
	body        []byte
	contentType string
	etag        string
}

// docsFiles are the files the page uses; every other name is 404. The upstream distribution's
// own index.html and initializer (an inline-free but petstore-pointing script) are left out.
func docsFiles() (page docsFile, assets map[string]docsFile, err error) {
	read := func(fsys fs.FS, name, contentType string) (docsFile, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return docsFile{}, err
		}
		sum := sha256.Sum256(b)
		return docsFile{body: b, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}, nil
	}
	if page, err = read(docsOwn, "docs/index.html", "text/html; charset=utf-8"); err != nil {
		return page, nil, err
	}
	assets = map[string]docsFile{}
	for name, ct := range map[string]string{
		"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
		"swagger-ui.css":       "text/css; charset=utf-8",
		"favicon-32x32.png":    "image/png",
		"favicon-16x16.png":    "image/png",
	} {
		if assets[name], err = read(swaggerfiles.FS, name, ct); err != nil {
			return page, nil, err
		}
	}
	if assets["init.js"], err = read(docsOwn, "docs/init.js", "text/javascript; charset=utf-8"); err != nil {
		return page, nil, err
	}
	if assets["hashgate.css"], err = read(docsOwn, "docs/hashgate.css", "text/css; charset=utf-8"); err != nil {
		return page, nil, err
	}
	return page, assets, nil
}

// isDocsPath reports whether p is the reference page or one of its files.
func isDocsPath(p string) bool { return p == "/docs" || strings.HasPrefix(p, "/docs/") }

// registerDocs adds GET /docs and GET /docs/:asset to e.
func registerDocs(e *echo.Echo) error {
	page, assets, err := docsFiles()
	if err != nil {
		return err
	}
	e.GET("/docs", func(c echo.Context) error { return serveDocsFile(c, "index.html", page) })
	// /docs/ leads to the reference: a relative Location, so it holds behind a path prefix
	// (the page's own links are relative to /docs, so it is not served at /docs/ as well).
	e.GET("/docs/", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "../docs") })
	e.GET("/docs/:asset", func(c echo.Context) error {
		name := c.Param("asset")
		f, ok := assets[name]
		if !ok {
			return apperr.New(apperr.NotFound, "The API reference has no file of that name.")
		}
		return serveDocsFile(c, name, f)
	})
	return nil
}

// serveDocsFile answers with f under the page's security headers; the ETag makes a browser's
// revalidation a 304.
func serveDocsFile(c echo.Context, name string, f docsFile) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	http.ServeContent(c.Response(), c.Request(), path.Base(name), time.Time{}, bytes.NewReader(f.body))
	return nil
}
