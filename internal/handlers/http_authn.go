package handlers

import (
	"errors"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/accessrules"
	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
)

// authnMiddleware authenticates operation o with its security requirements from the spec
// index, before the body is read or judged, so an unauthenticated caller learns nothing about
// the body rules. A hot route also refuses a body and checks its query enums here, since the
// validator skips it.
func (s *Server) authnMiddleware(o specOp) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if len(o.security) == 0 {
			return next
		}
		return func(c echo.Context) error {
			r := c.Request()
			var rule *accessrules.Rule // forward auth under access rules: the rule deciding
			if o.authorize && s.Rules != nil {
				var err error
				if rule, err = forwardedRule(s.Rules.Current(), r); err != nil {
					return closeUnread(c, err)
				}
			}
			if o.asGet {
				r.Method = http.MethodGet // from here on it is the GET: body check, strictJSON, logs
			}
			p, err := s.authAlternatives(r, o.security, o.view)
			if err != nil {
				if rule != nil && rule.Policy == accessrules.Allow && r.ContentLength == 0 {
					return anonymousOK(c)
				}
				if pe := (*apperr.Error)(nil); errors.As(err, &pe) && pe.Kind != apperr.Unavailable {
					s.auditFailure(c, "auth."+pe.Kind.Slug, nil)
				}
				return closeUnread(c, err)
			}
			if o.hot && r.ContentLength != 0 { // -1: chunked
				return closeUnread(c, &apperr.Error{Kind: apperr.Validation, Detail: "This operation takes no request body.",
					Fields: []apperr.FieldError{{Pointer: "/", Detail: "request body not allowed for this request"}}})
			}
			if err := checkEnums(r, o.enums); err != nil {
				return err
			}
			if rule != nil {
				if rule.Policy == accessrules.Allow && p.LoginPending {
					return anonymousOK(c) // not logged in: anonymous, as without a credential
				}
				if err := checkRule(rule, p); err != nil {
					return err
				}
			}
			if !o.hot {
				if err := s.limitRate(c, p); err != nil {
					return closeUnread(c, err)
				}
			}
			ctx := auth.WithPrincipal(r.Context(), p)
			if !o.hot { // the hot routes write no event
				ctx = events.WithOrigin(ctx, events.Origin{Actor: actorOf(p), RequestID: requestID(c)})
			}
			*r = *r.WithContext(ctx)
			return next(c)
		}
	}
}

// closeUnread answers a request refused before its body was read (when it has one:
// Content-Length > 0 or chunked) without reading that body: "Connection: close", and a read
// deadline already passed. net/http would otherwise read and discard up to 256 KiB of the body
// twice over — before sending the answer, unless the connection is to close, and again when
// the handler returns, to reuse the connection — so a client sending slowly (or never
// finishing) would wait the whole read timeout for its refusal and hold the connection as long.
func closeUnread(c echo.Context, err error) error {
	if c.Request().ContentLength != 0 {
		c.Response().Header().Set(echo.HeaderConnection, "close")
		// Only reads stop; the answer is still written. Where the writer cannot (HTTP/2, a
		// test recorder) the stream is reset or nothing waits anyway.
		_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now())
	}
	return err
}

// authAlternatives tries each security requirement in spec order, like kin-openapi: the first
// that succeeds wins; otherwise the most telling refusal is returned.
func (s *Server) authAlternatives(r *http.Request, reqs openapi3.SecurityRequirements, view bool) (*auth.Principal, error) {
	var errs []error // only a refusal needs them
	for _, req := range reqs {
		var p *auth.Principal
		err := errAbsent
		for scheme, scopes := range req { // one scheme per requirement in this spec
			if p, err = s.authScheme(r, scheme, scopes, view); err != nil {
				break
			}
		}
		if err == nil && p != nil {
			return p, nil
		}
		errs = append(errs, err)
	}
	err := securityProblem(r, reqs, errs)
	s.failures.count(r, err)
	return nil, err
}

func checkEnums(r *http.Request, enums map[string][]any) error {
	if len(enums) == 0 || r.URL.RawQuery == "" {
		return nil
	}
	q := r.URL.Query()
	var fields []apperr.FieldError
	for name, allowed := range enums {
		vals, ok := q[name]
		if !ok || len(allowed) == 0 {
			continue
		}
		if len(vals) != 1 || !contains(allowed, vals[0]) {
			fields = append(fields, apperr.FieldError{Parameter: "query:" + name, Detail: "value is not one of the allowed values"})
		}
	}
	if len(fields) > 0 {
		return &apperr.Error{Kind: apperr.Validation, Detail: "Invalid query parameters.", Fields: fields}
	}
	return nil
}

func contains(allowed []any, v string) bool {
	for _, a := range allowed {
		if s, ok := a.(string); ok && s == v {
			return true
		}
	}
	return false
}
