package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// hotRoutes are the operations every proxied request hits. They skip the generic kin-openapi
// validator (route lookup, body buffering and schema walk cost more than the rest of the
// request); their only parameter (authorize's `level`) is checked against its enum from the
// spec by the authentication middleware, and neither takes a body.
var hotRoutes = map[string]bool{
	http.MethodGet + " /v1/authorize": true,
	http.MethodGet + " /v1/session":   true,
}

// viewRoutes answer with the caller's session view ("who am I"): their authentication reads
// it in its one round trip. Every other operation needs only what the forward-auth decision
// reads (six fields).
var viewRoutes = map[string]bool{
	http.MethodGet + " /v1/session": true,
}

// specOp is what the HTTP plumbing needs of one operation of the spec.
type specOp struct {
	security  openapi3.SecurityRequirements // the operation's, else the document's
	hot       bool                          // one of hotRoutes: the validator skips it
	view      bool                          // one of viewRoutes
	enums     map[string][]any              // hot routes: query parameter → allowed values
	takesBody bool                          // the operation defines a request body
	// form lists the properties of its application/x-www-form-urlencoded body schema; nil when
	// it takes no form.
	form map[string]bool
	// asGet: the route is /v1/authorize under another method (forwardAuthMethods), answered as
	// its GET.
	asGet bool
	// authorize: the route is /v1/authorize under any method (the access rules apply).
	authorize bool
	// ifMatch: the operation requires If-Match (requireIfMatch answers 428 without it).
	ifMatch bool
	// query: a list's query parameters (listParams, pages.go); nil for other operations.
	query map[string]bool
}

// forwardAuthMethods are the methods besides GET that /v1/authorize answers as GET: Envoy's
// ext_authz HTTP filter calls the authorization service with the original request's method
// (its path_override fixes only the path), so a POST to the protected app arrives as POST
// /v1/authorize, without its body. HEAD is not among them (net/http would then drop the body
// the answer must carry). They are routes of their own rather than a rewrite before routing:
// Echo's pre-routing middleware costs every request two allocations.
var forwardAuthMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// specIndex is the spec read once, at start, per operation: the authentication middleware,
// strict JSON and the validator are built per operation from it (perOperation). Keys are
// "METHOD echoPath", as c.Request().Method + " " + c.Path() gives them.
type specIndex map[string]specOp

func newSpecIndex(spec *openapi3.T) specIndex {
	ix := specIndex{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			o := specOp{security: spec.Security, takesBody: op.RequestBody != nil}
			if op.Security != nil {
				o.security = *op.Security
			}
			o.view = viewRoutes[method+" "+path]
			o.ifMatch = requiresIfMatch(op.Parameters)
			o.query = listParams(append(slices.Clip(item.Parameters), op.Parameters...))
			if o.hot = hotRoutes[method+" "+path]; o.hot {
				o.enums = map[string][]any{}
				for _, pr := range op.Parameters {
					if v := pr.Value; v.In == openapi3.ParameterInQuery && v.Schema != nil && v.Schema.Value != nil {
						o.enums[v.Name] = v.Schema.Value.Enum
					}
				}
			}
			if rb := op.RequestBody; rb != nil && rb.Value != nil {
				if mt := rb.Value.Content.Get("application/x-www-form-urlencoded"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
					o.form = map[string]bool{}
					for name := range mt.Schema.Value.Properties {
						o.form[name] = true
					}
				}
			}
			ix[method+" "+specPathToEcho(path)] = o
		}
	}
	if o, ok := ix[http.MethodGet+" /v1/authorize"]; ok {
		o.authorize = true
		ix[http.MethodGet+" /v1/authorize"] = o
		o.asGet = true
		for _, m := range forwardAuthMethods {
			ix[m+" /v1/authorize"] = o
		}
	}
	return ix
}

// perOperation is one middleware that runs, for the operation a request was routed to, the
// chain build made for that operation at start (the zero specOp for routes outside the spec:
// /metrics, the API reference, no route). A request looks its operation up once, where the
// middleware built from the index looked it up one by one (three map lookups of a
// concatenated key per request).
func (ix specIndex) perOperation(build func(specOp) []echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrap := func(o specOp) echo.HandlerFunc {
			mws := build(o)
			h := next
			for i := len(mws) - 1; i >= 0; i-- {
				h = mws[i](h)
			}
			return h
		}
		byOp := make(map[string]echo.HandlerFunc, len(ix))
		for k, o := range ix {
			byOp[k] = wrap(o)
		}
		outside := wrap(specOp{})
		return func(c echo.Context) error {
			if h, ok := byOp[c.Request().Method+" "+c.Path()]; ok {
				return h(c)
			}
			return outside(c)
		}
	}
}

// specPathToEcho turns /v1/quotes/{quoteId} into Echo's /v1/quotes/:quoteId.
func specPathToEcho(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			b.WriteByte(':')
		case '}':
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}
