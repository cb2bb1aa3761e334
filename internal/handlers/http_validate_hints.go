package handlers

import (
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/hashgate/hashgate/internal/apperr"
)

// What the validation refusals say instead of the validator's own words: the members an object
// takes, the body an operation takes, its content types, what a date-time looks like.

// unsupportedProperty is kin-openapi's reason for a member the schema does not define.
var unsupportedProperty = regexp.MustCompile(`^property ("(?:[^"\\]|\\.)*") is unsupported$`)

// formatHints say what a string of each format looks like, instead of the validator's regular
// expression.
var formatHints = map[string]string{
	"date-time": "must be an RFC 3339 date-time with a time zone, e.g. 2026-01-31T17:00:00Z or 2026-01-31T18:00:00.000+01:00",
	"date":      "must be an RFC 3339 full-date, e.g. 2026-01-31",
}

// propertyList names the members of an object schema, required ones first: "customerId,
// currency, salesChannel (required); notes".
func propertyList(schema *openapi3.Schema) string {
	if schema == nil || len(schema.Properties) == 0 {
		return "no members"
	}
	required := map[string]bool{}
	for _, n := range schema.Required {
		required[n] = true
	}
	var req, opt []string
	for _, n := range slices.Sorted(maps.Keys(schema.Properties)) {
		if required[n] {
			req = append(req, n)
		} else {
			opt = append(opt, n)
		}
	}
	var b strings.Builder
	if len(req) > 0 {
		b.WriteString(strings.Join(req, ", ") + " (required)")
	}
	if len(opt) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(opt, ", "))
	}
	return b.String()
}

// requestBodyOf is the operation's request body as the validator's errors carry it (nil when
// none names it).
func requestBodyOf(me openapi3.MultiError) *openapi3.RequestBody {
	for _, err := range me {
		var re *openapi3filter.RequestError
		if errors.As(err, &re) && re.RequestBody != nil {
			return re.RequestBody
		}
	}
	return nil
}

// missingBody reports the validator's "required but missing" for the request body.
func missingBody(me openapi3.MultiError) bool {
	for _, err := range me {
		var re *openapi3filter.RequestError
		if errors.As(err, &re) && re.Parameter == nil && re.RequestBody != nil && errors.Is(re.Err, openapi3filter.ErrInvalidRequired) {
			return true
		}
	}
	return false
}

// bodyWanted says what body an operation takes: "application/json with customerId, currency,
// salesChannel (required); notes".
func bodyWanted(rb *openapi3.RequestBody) string {
	types := mediaTypes(rb)
	out := strings.Join(types, " or ")
	if mt := rb.Content.Get(types[0]); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
		out += " with " + propertyList(mt.Schema.Value)
	}
	return out
}

// mediaTypes are the content types an operation's body may have, sorted.
func mediaTypes(rb *openapi3.RequestBody) []string {
	if rb == nil || len(rb.Content) == 0 {
		return []string{"application/json"}
	}
	return slices.Sorted(maps.Keys(rb.Content))
}

// unsupportedMedia is the 415 naming the content types the operation takes; a PATCH also
// answers them in Accept-Patch (RFC 5789 §3.1).
func unsupportedMedia(r *http.Request, rb *openapi3.RequestBody) error {
	types := mediaTypes(rb)
	p := apperr.New(apperr.UnsupportedMediaType, "Send the body as "+strings.Join(types, " or ")+" (the Content-Type header).")
	if r.Method == http.MethodPatch {
		p.WithHeader("Accept-Patch", strings.Join(types, ", "))
	}
	return p
}
