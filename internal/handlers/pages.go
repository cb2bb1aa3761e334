package handlers

// Cursor pages, the handler side every list shares.
//
// A list operation is one whose spec takes the shared `cursor` parameter
// (`$ref: "#/components/parameters/Cursor"`, with `Limit` beside it, and the `Link` header on
// its 200). For such an operation, with nothing more to write:
//   - a query parameter the operation does not define is refused with a 400 problem naming it
//     (`query:<name>`), before the validator runs: a mistyped filter never lists everything;
//   - the request's path and query are kept on its context, for nextLink.
//
// Its handler then does:
//
//	page, err := s.Things.List(ctx, caller(ctx).Tenant, deref(request.Params.Cursor), pageSize(request.Params.Limit))
//	...
//	return ListThings200JSONResponse{Body: ThingPage{Items: views(page.Items, thingView), ...},
//		Headers: ListThings200ResponseHeaders{Link: nextLink(ctx, page.NextCursor)}}, nil // nil on the last page
//
// The cursor itself is the domain's (opaque to this package): its service refuses one that
// does not fit with a 400 naming `query:cursor` (internal/page: BadCursor, and the cursor
// codec of a list read whole or by exact position).

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
)

// The page sizes of every list (the spec's Limit parameter).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// pageSize is the page size the request asks for: DefaultPageLimit when absent. The validator
// refuses a limit outside 1..MaxPageLimit (the spec's bounds) with a 400 naming it before any
// list handler runs; the clamp keeps every service's page bounded all the same.
func pageSize(limit *int) int {
	if limit == nil {
		return DefaultPageLimit
	}
	return min(max(*limit, 1), MaxPageLimit)
}

// views is the response view of each of a page's items, in order.
func views[T, V any](items []T, view func(T) V) []V {
	out := make([]V, 0, len(items))
	for _, it := range items {
		out = append(out, view(it))
	}
	return out
}

// pageURLKey carries a list request's escaped path and raw query (listQuery puts it there).
type pageURLKey struct{}

type pageURL struct{ path, query string }

// nextLink is the RFC 8288 Link header value naming the next page, `<path?query>; rel="next"`,
// or nil when next is "" (the last page) or the request is not a list's. The target is a
// relative reference: the request's own path and query, each parameter kept in its place
// and re-escaped, with `cursor` replaced by next (appended when the request had none).
func nextLink(ctx context.Context, next string) *string {
	u, ok := ctx.Value(pageURLKey{}).(pageURL)
	if next == "" || !ok {
		return nil
	}
	var b strings.Builder
	b.WriteString("<")
	b.WriteString(u.path)
	sep, replaced := "?", false
	for _, pair := range strings.Split(u.query, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, errK := url.QueryUnescape(k)
		v, errV := url.QueryUnescape(v)
		if errK != nil || errV != nil { // listQuery refused such a query; never echo it raw
			continue
		}
		if k == "cursor" {
			if replaced {
				continue
			}
			v, replaced = next, true
		}
		b.WriteString(sep + url.QueryEscape(k) + "=" + url.QueryEscape(v))
		sep = "&"
	}
	if !replaced {
		b.WriteString(sep + "cursor=" + url.QueryEscape(next))
	}
	b.WriteString(`>; rel="next"`)
	link := b.String()
	return &link
}

// listParams is the query parameters a list operation defines, or nil for any other
// operation (one without the `cursor` query parameter).
func listParams(params openapi3.Parameters) map[string]bool {
	names := map[string]bool{}
	for _, p := range params {
		if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
			names[p.Value.Name] = true
		}
	}
	if !names["cursor"] {
		return nil
	}
	return names
}

// listQuery is the middleware of a list operation (o.query set): a query that is not
// application/x-www-form-urlencoded, or that names a parameter the operation does not
// define, is a 400 problem naming each such parameter; otherwise the request's path and query
// go on its context for nextLink.
func listQuery(o specOp) echo.MiddlewareFunc {
	known := make([]string, 0, len(o.query))
	for k := range o.query {
		known = append(known, k)
	}
	slices.Sort(known)
	takes := strings.Join(known, ", ")
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			values, err := url.ParseQuery(r.URL.RawQuery)
			if err != nil {
				return &apperr.Error{Kind: apperr.Validation, Detail: "The query string is not URL-encoded name=value pairs joined by &: this list takes " + takes + ".",
					Fields: []apperr.FieldError{{Parameter: "query", Detail: "not application/x-www-form-urlencoded"}}}
			}
			var unknown []string
			for k := range values {
				if !o.query[k] {
					unknown = append(unknown, k)
				}
			}
			if len(unknown) > 0 {
				return unknownParams(unknown, takes)
			}
			ctx := context.WithValue(r.Context(), pageURLKey{}, pageURL{path: r.URL.EscapedPath(), query: r.URL.RawQuery})
			c.SetRequest(r.WithContext(ctx))
			return next(c)
		}
	}
}

// unknownParams is the 400 for query parameters a list does not define (takes: those it does).
func unknownParams(unknown []string, takes string) error {
	slices.Sort(unknown)
	if len(unknown) > 20 {
		unknown = unknown[:20]
	}
	fields := make([]apperr.FieldError, len(unknown))
	names := make([]string, len(unknown))
	for i, k := range unknown {
		fields[i] = apperr.FieldError{Parameter: "query:" + k, Detail: "unknown parameter"}
		names[i] = strconv.Quote(k)
	}
	return &apperr.Error{Kind: apperr.Validation,
		Detail: clip("Unknown query parameter " + strings.Join(names, ", ") + ": this list takes " + takes + "."),
		Fields: fields}
}
