package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
)

// RequestValidator validates every request it is put in front of (every operation's but the
// hot routes': NewEcho) against the spec: kin-openapi through oapi-codegen's Echo middleware. Authentication has already run
// (authnMiddleware); the validator's security step only confirms a principal is on the request.
func (s *Server) RequestValidator(spec *openapi3.T) echo.MiddlewareFunc {
	spec.Servers = nil
	return echomw.OapiRequestValidatorWithOptions(spec, &echomw.Options{
		Options: openapi3filter.Options{
			AuthenticationFunc: s.authenticate,
			MultiError:         true,
			// A body on an operation that defines none is refused, not ignored.
			RejectWhenRequestBodyNotSpecified: true,
			// An explicit null is refused ("not nullable") instead of being replaced by the
			// schema default; handlers apply defaults for absent members themselves.
			SkipSettingDefaults: true,
			// Schema errors would carry the failing value and schema in their Error() text;
			// only their Reason and pointer are rendered, so do not build those details.
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
			// The generated strict handlers bind the value the validator decoded (with exact
			// member names); without it they re-decode with Echo's binder, which refuses
			// application/merge-patch+json.
			KeepValidatedValue: true,
		},
		// The API reference (http_docs.go) and the problem type pages
		// (http_problempages.go) are in the contract but not in the generated server, whose
		// embedded spec the validator routes by.
		Skipper: func(c echo.Context) bool {
			p := c.Request().URL.Path
			return isDocsPath(p) || isProblemPath(p)
		},
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError {
			return &echo.HTTPError{Code: http.StatusBadRequest, Internal: me}
		},
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error {
			if me, ok := he.Internal.(openapi3.MultiError); ok {
				return validationProblem(c.Request(), me)
			}
			if he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed {
				return he
			}
			var re *openapi3filter.RequestError
			if errors.As(he.Internal, &re) {
				return validationProblem(c.Request(), openapi3.MultiError{re})
			}
			var se *openapi3filter.SecurityRequirementsError
			if errors.As(he.Internal, &se) {
				return securityProblem(c.Request(), se.SecurityRequirements, se.Errors)
			}
			return he
		},
	})
}

// securityProblem picks the most telling failure among the operation's security alternatives
// (reqs): a presented-but-refused credential beats "nothing presented". The refusal names the
// credential the operation takes and where it goes (missingCredential, sessionAsBearer).
func securityProblem(r *http.Request, reqs openapi3.SecurityRequirements, errs []error) error {
	var best *apperr.Error
	rank := func(e *apperr.Error) int {
		switch e.Kind {
		case apperr.Internal:
			return 5
		case apperr.Unavailable:
			return 4
		case apperr.InsufficientScope, apperr.StepUpRequired:
			return 3
		case apperr.InvalidCredentials:
			return 2
		}
		return 1
	}
	for _, err := range errs {
		p, ok := apperr.As(err)
		if !ok && err != nil && !errors.Is(err, errAbsent) {
			// A credential that could not be checked (not a verdict on it): 500, never 401,
			// which would tell the client to drop a credential that may be good.
			p = apperr.Wrap(apperr.Internal, "The credential could not be checked.", err)
		}
		if p != nil && (best == nil || rank(p) > rank(best)) {
			best = p
		}
	}
	if best == nil {
		return missingCredential(r, reqs)
	}
	if best.Kind == apperr.InvalidCredentials {
		if raw, ok := auth.BearerToken(r); ok && looksLikeSessionToken(raw) {
			return sessionAsBearer(best, reqs)
		}
	}
	return best
}

// validationProblem turns kin-openapi's errors into one 400 problem naming every failing field.
func validationProblem(r *http.Request, me openapi3.MultiError) error {
	var sec *openapi3filter.SecurityRequirementsError
	for _, err := range me {
		if errors.As(err, &sec) {
			return securityProblem(r, sec.SecurityRequirements, sec.Errors)
		}
	}
	body := requestBodyOf(me)
	if body != nil && missingBody(me) {
		return &apperr.Error{Kind: apperr.Validation, Detail: "The request body is missing: send " + bodyWanted(body) + ".",
			Fields: []apperr.FieldError{{Pointer: "/", Detail: "required"}}}
	}
	var fields []apperr.FieldError
	media := false
	for _, err := range me {
		fields = appendFieldErrors(fields, err, &media)
	}
	if media {
		return unsupportedMedia(r, body)
	}
	if len(fields) > 50 {
		fields = fields[:50]
	}
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		if f.Pointer != "" {
			names = append(names, f.Pointer)
		} else if f.Parameter != "" {
			names = append(names, f.Parameter)
		}
	}
	detail := "The request does not match the contract."
	switch names = uniq(names); {
	case len(names) == 1 && len(fields) == 1:
		detail = clip("Invalid " + names[0] + ": " + strings.TrimSuffix(fields[0].Detail, ".") + ".")
	case len(names) > 0:
		detail = "Invalid: " + strings.Join(names, ", ") + "."
	}
	return &apperr.Error{Kind: apperr.Validation, Detail: detail, Fields: fields}
}

func appendFieldErrors(out []apperr.FieldError, err error, media *bool) []apperr.FieldError {
	var re *openapi3filter.RequestError
	if me, ok := err.(openapi3.MultiError); ok {
		for _, e := range me {
			out = appendFieldErrors(out, e, media)
		}
		return out
	}
	if !errors.As(err, &re) {
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			return append(out, schemaField(se))
		}
		return append(out, apperr.FieldError{Detail: clip(err.Error())})
	}
	if re.Parameter != nil {
		name := re.Parameter.In + ":" + re.Parameter.Name
		var reasons []string
		var inner openapi3.MultiError
		var se *openapi3.SchemaError
		switch {
		case errors.As(re.Err, &inner):
			for _, e := range inner {
				if errors.As(e, &se) {
					reasons = append(reasons, schemaReason(se))
				}
			}
		case errors.As(re.Err, &se):
			reasons = append(reasons, schemaReason(se))
		case re.Reason != "":
			reasons = append(reasons, re.Reason)
		case re.Err != nil:
			reasons = append(reasons, re.Err.Error())
		}
		if len(reasons) == 0 {
			reasons = append(reasons, "invalid")
		}
		return append(out, apperr.FieldError{Parameter: name, Detail: clip(strings.Join(slices.Compact(reasons), "; "))})
	}
	var ce *openapi3filter.ParseError
	if errors.As(re.Err, &ce) {
		return append(out, apperr.FieldError{Pointer: "/", Detail: "The body is not valid for its content type."})
	}
	// Only the Reason: rendering re.Err would print every schema error with its schema and
	// value, which costs thousands of times the body's size on a hostile body.
	if strings.Contains(re.Reason, "header Content-Type has unexpected value") {
		*media = true
		return out
	}
	var inner openapi3.MultiError
	if errors.As(re.Err, &inner) {
		for _, e := range inner {
			out = appendFieldErrors(out, e, media)
		}
		return out
	}
	var se *openapi3.SchemaError
	if errors.As(re.Err, &se) {
		return append(out, schemaField(se))
	}
	detail := re.Reason
	if detail == "" && re.Err != nil {
		detail = re.Err.Error()
	}
	return append(out, apperr.FieldError{Pointer: "/", Detail: clip(detail)})
}

func schemaField(se *openapi3.SchemaError) apperr.FieldError {
	ptr := "/" + strings.Join(escapePointer(se.JSONPointer()), "/")
	switch se.SchemaField {
	case "properties":
		// An unknown member: kin-openapi points at the object; point at the member and say
		// what the object takes.
		if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil {
			if name, err := strconv.Unquote(m[1]); err == nil {
				// The name is the caller's (valid UTF-8 without control characters: strictJSON);
				// bound what is echoed of it.
				return apperr.FieldError{Pointer: bounded(strings.TrimSuffix(ptr, "/")+"/"+escapePointer([]string{name})[0], 128),
					Detail: clip("unknown member; this object takes " + propertyList(se.Schema))}
			}
		}
	case "format":
		if se.Schema != nil && formatHints[se.Schema.Format] != "" {
			return apperr.FieldError{Pointer: ptr, Detail: formatHints[se.Schema.Format]}
		}
	}
	reason := schemaReason(se)
	if se.SchemaField != "" && !stringShape(se) && !strings.Contains(reason, se.SchemaField) {
		reason = fmt.Sprintf("%s (%s)", reason, se.SchemaField)
	}
	return apperr.FieldError{Pointer: ptr, Detail: clip(reason)}
}

// schemaReason is what a schema refusal says: in words for a string's length or pattern,
// else the validator's reason.
func schemaReason(se *openapi3.SchemaError) string {
	if stringShape(se) {
		return stringHint(se.Schema)
	}
	return se.Reason
}

func escapePointer(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
	}
	return out
}

// clip bounds a message and strips anything that is not valid UTF-8; kin-openapi reasons do
// not echo values, but bound them anyway.
func clip(s string) string { return bounded(s, 300) }

func uniq(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
