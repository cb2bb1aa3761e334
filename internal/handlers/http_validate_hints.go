package handlers

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
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

// stringShape is a string's length or pattern failing: the refusal says what the string may
// hold (stringHint) instead of the validator's regular expression.
func stringShape(se *openapi3.SchemaError) bool {
	switch se.SchemaField {
	case "pattern", "minLength", "maxLength":
		return se.Schema != nil && stringHint(se.Schema) != ""
	}
	return false
}

// classPattern is a pattern that only restricts characters: ^[class]+$, ^[class]*$, ^[class]{n}$.
var classPattern = regexp.MustCompile(`^\^\[([^\]]+)\](?:\+|\*|\{\d+\})\$$`)

// stringHint says in words what a string of this schema holds: its length, then an example
// (the spec's) or the characters a class-only pattern allows ("must be 1 to 64 characters of
// A-Z a-z 0-9 . _ : -"). Empty when the schema constrains neither.
func stringHint(s *openapi3.Schema) string {
	var length string
	maxLen := uint64(0)
	if s.MaxLength != nil {
		maxLen = *s.MaxLength
	}
	switch {
	case maxLen > 0 && s.MinLength == maxLen:
		length = fmt.Sprintf("exactly %d characters", maxLen)
	case maxLen > 0 && s.MinLength > 0:
		length = fmt.Sprintf("%d to %d characters", s.MinLength, maxLen)
	case maxLen > 0:
		length = fmt.Sprintf("at most %d characters", maxLen)
	case s.MinLength > 0:
		length = fmt.Sprintf("at least %d characters", s.MinLength)
	}
	var chars string
	if s.Example != nil {
		chars = fmt.Sprintf(", e.g. %v", s.Example)
	} else if m := classPattern.FindStringSubmatch(s.Pattern); m != nil {
		chars = " of " + describeClass(m[1])
	} else if s.Pattern != "" {
		return "" // a pattern words cannot say: the validator's own reason stays
	}
	if length == "" && chars == "" {
		return ""
	}
	if length == "" {
		return "must be characters" + chars
	}
	return "must be " + length + chars
}

// describeClass spells a regular expression's character class for a person: "A-Za-z0-9._-"
// → "A-Z a-z 0-9 . _ -"; a space is "space", \xNN escapes become the characters they name.
func describeClass(class string) string {
	rs := []rune(class)
	char := func(i int) (rune, int) {
		if rs[i] == '\\' && i+3 < len(rs) && rs[i+1] == 'x' {
			if n, err := strconv.ParseUint(string(rs[i+2:i+4]), 16, 8); err == nil {
				return rune(n), i + 4
			}
		}
		if rs[i] == '\\' && i+1 < len(rs) {
			return rs[i+1], i + 2
		}
		return rs[i], i + 1
	}
	name := func(r rune) string {
		if r == ' ' {
			return "space"
		}
		return string(r)
	}
	var parts []string
	for i := 0; i < len(rs); {
		lo, next := char(i)
		if next+1 < len(rs) && rs[next] == '-' {
			hi, after := char(next + 1)
			parts = append(parts, name(lo)+"-"+name(hi))
			i = after
			continue
		}
		parts = append(parts, name(lo))
		i = next
	}
	return strings.Join(parts, " ")
}
