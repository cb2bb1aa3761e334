package handlers

import (
	"encoding/json"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
)

// GET /problems/{slug} is the page of one problem type, the URI every problem's `type` names
// (apperr.Kind.Type): its title, status, when the gateway answers with it and what to do.
// HTML for a browser; JSON (application/json) or plain text by content negotiation, so curl
// reads it too. In the contract (getProblemType), served here: not every representation is
// JSON.

// problemPage is the JSON representation of a problem type's page.
type problemPage struct {
	Type   string `json:"type"`
	Slug   string `json:"slug"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	When   string `json:"when"`
	Do     string `json:"do"`
}

// problemPageHTML renders one page; ../docs/hashgate.css is the reference's style sheet,
// relative so the page works behind a path prefix.
var problemPageHTML = template.Must(template.New("problem").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{{.Title}} ({{.Status}}) · hashgate problem types</title>
  <link rel="stylesheet" href="../docs/hashgate.css">
</head>
<body class="problem-page">
  <main>
    <p class="problem-type"><code>{{.Type}}</code></p>
    <h1>{{.Title}}</h1>
    <p class="problem-status">HTTP status <strong>{{.Status}}</strong> · slug <code>{{.Slug}}</code></p>
    <h2>When it happens</h2>
    <p class="problem-when">{{.When}}</p>
    <h2>What to do</h2>
    <p class="problem-do">{{.Do}}</p>
    <p>Every error of this gateway is an RFC 9457 problem (<code>application/problem+json</code>):
    <code>type</code> is this page, <code>detail</code> says what was wrong with the request,
    <code>errors</code> lists failing fields by JSON pointer, <code>requestId</code> finds it in the logs.</p>
    <p><a href="../docs">API reference</a></p>
  </main>
</body>
</html>
`))

// problemPageCSP: no script at all; the style sheet from this origin.
const problemPageCSP = "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// isProblemPath reports whether p is a problem type's page.
func isProblemPath(p string) bool { return strings.HasPrefix(p, apperr.PagePath) }

// registerProblemPages adds GET /problems/:slug to e; base is Deps.PublicURL.
func registerProblemPages(e *echo.Echo, base string) {
	e.GET(apperr.PagePath+":slug", func(c echo.Context) error {
		k, ok := apperr.Lookup(c.Param("slug"))
		page, hasPage := apperr.PageOf(k)
		if !ok || !hasPage {
			return apperr.New(apperr.NotFound, "No problem type of that name; the API reference (/docs) lists them all.")
		}
		p := problemPage{Type: k.Type(base), Slug: k.Slug, Title: k.Title, Status: k.Status, When: page.When, Do: page.Do}
		h := c.Response().Header()
		h.Set("Vary", "Accept")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("X-Content-Type-Options", "nosniff")
		switch negotiate(c.Request().Header.Get("Accept"), "text/html", "application/json", "text/plain") {
		case "application/json":
			b, err := json.Marshal(p)
			if err != nil {
				return err
			}
			return c.Blob(http.StatusOK, "application/json", b)
		case "text/plain":
			return c.String(http.StatusOK, p.Title+" ("+strconv.Itoa(p.Status)+")\n"+p.Type+"\n\nWhen it happens: "+p.When+"\n\nWhat to do: "+p.Do+"\n")
		}
		h.Set("Content-Security-Policy", problemPageCSP)
		h.Set("Referrer-Policy", "no-referrer")
		var b strings.Builder
		if err := problemPageHTML.Execute(&b, p); err != nil {
			return err
		}
		return c.HTML(http.StatusOK, b.String())
	})
}

// negotiate picks, of offers (in the server's order of preference), the one the Accept header
// rates highest (RFC 9110 §12.5.1: q-values; an exact type beats type/*, which beats */*). A
// header that accepts none of them gets the first offer (HTML); no header, or one whose only
// match is */* (curl, most HTTP libraries), gets the last (plain text).
func negotiate(accept string, offers ...string) string {
	if strings.TrimSpace(accept) == "" {
		return offers[len(offers)-1]
	}
	best, bestQ, bestSpecific := offers[0], -1.0, -1
	for _, offer := range offers {
		q, specific := -1.0, -1
		for _, part := range strings.Split(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			s := 0
			switch {
			case mt == offer:
				s = 2
			case strings.HasSuffix(mt, "/*") && strings.HasPrefix(offer, strings.TrimSuffix(mt, "*")):
				s = 1
			case mt == "*/*":
				s = 0
			default:
				continue
			}
			if s < specific {
				continue
			}
			pq := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					pq = f
				}
			}
			q, specific = pq, s
		}
		// A */*-only match ranks below an explicit one of the same q.
		if q > bestQ || q == bestQ && specific > bestSpecific {
			best, bestQ, bestSpecific = offer, q, specific
		}
	}
	if bestQ <= 0 {
		return offers[0]
	}
	if bestSpecific == 0 {
		return offers[len(offers)-1] // only */*: curl, most HTTP libraries
	}
	return best
}
