// ETag and If-Match: the strong entity tags the gateway issues (a stateVersion in quotes) and
// how a conditional write's If-Match is read.

package handlers

import (
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
)

// etagOf is the strong entity tag of a stateVersion: "3".
func etagOf(version int64) *string {
	v := `"` + strconv.FormatInt(version, 10) + `"`
	return &v
}

// requiresIfMatch reports whether params hold a required If-Match header.
func requiresIfMatch(params openapi3.Parameters) bool {
	for _, p := range params {
		if v := p.Value; v != nil && v.In == openapi3.ParameterInHeader && v.Required && strings.EqualFold(v.Name, "If-Match") {
			return true
		}
	}
	return false
}

// requireIfMatch answers 428 to a request without If-Match (or with an empty one) on an
// operation whose spec requires it: the contract says "required" so the typed client's
// signature does, and a caller that still omits it is told what to send, not a generic 400.
func requireIfMatch(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if strings.TrimSpace(c.Request().Header.Get("If-Match")) == "" {
			return ifMatchRequired()
		}
		return next(c)
	}
}

// ifMatchRequired is the 428 of a write sent without the If-Match it requires.
func ifMatchRequired() error {
	return apperr.New(apperr.PreconditionRequired, `Send If-Match with the ETag you last read, e.g. If-Match: "3".`)
}

// ifMatchVersion reads an If-Match header as the stateVersion the caller last saw.
//   - absent: 428 when required, else -1 (no condition);
//   - "*": 428 when required (it would not protect against lost updates), else -1;
//   - not one entity tag (no quotes, a list, stray characters): 400;
//   - a well-formed tag this gateway never issues (W/"3", "abc", "0"): it cannot match, 412.
func ifMatchVersion(h *string, required bool) (int64, error) {
	v := ""
	if h != nil {
		v = strings.TrimSpace(*h)
	}
	if v == "" || v == "*" {
		if required {
			return 0, ifMatchRequired()
		}
		return -1, nil
	}
	weak := strings.HasPrefix(v, "W/")
	tag := strings.TrimPrefix(v, "W/")
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || !etagChars(tag[1:len(tag)-1]) {
		return 0, &apperr.Error{Kind: apperr.Validation, Detail: `If-Match must be one entity tag, e.g. "3".`,
			Fields: []apperr.FieldError{{Parameter: "header:If-Match", Detail: "not an entity tag"}}}
	}
	inner := tag[1 : len(tag)-1]
	n, err := strconv.ParseInt(inner, 10, 64)
	if weak || err != nil || n < 1 || strconv.FormatInt(n, 10) != inner {
		return 0, apperr.New(apperr.PreconditionFailed, "The If-Match ETag does not match the current version.")
	}
	return n, nil
}

// ifMatchOrAny reads the If-Match of a write that requires one and takes If-Match: * too: "*"
// matches whatever version is current (RFC 9110 §13.1.1) and answers anyVersion, which the
// store still refuses with 404 when the object does not exist.
func ifMatchOrAny(h *string, anyVersion int64) (int64, error) {
	if h != nil && strings.TrimSpace(*h) == "*" {
		return anyVersion, nil
	}
	return ifMatchVersion(h, true)
}

// etagChars reports whether s holds only etagc characters (RFC 9110: %x21 / %x23-7E).
func etagChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c > 0x7e {
			return false
		}
	}
	return true
}
