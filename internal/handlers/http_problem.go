package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/store"
)

// problemBody is the RFC 9457 body every error is rendered as.
type problemBody struct {
	Type       string              `json:"type"`
	Title      string              `json:"title"`
	Status     int                 `json:"status"`
	Detail     string              `json:"detail,omitempty"`
	Instance   string              `json:"instance,omitempty"`
	RequestID  string              `json:"requestId,omitempty"`
	Errors     []apperr.FieldError `json:"errors,omitempty"`
	RetryAfter int                 `json:"retryAfter,omitempty"`
}

// HTTPErrorHandler is the one place errors become responses. Expected refusals (*apperr.Error
// or a wrapped *apperr.Kind) keep their detail; Echo's own errors are mapped to problem types;
// Redis trouble is 503 with Retry-After; anything else is a 500 whose detail is only logged.
func (s *Server) HTTPErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := s.toProblem(c, err)
	if p.Kind == apperr.QuotaExceeded {
		s.refusedQuota(c, p)
	}
	if p.Kind == apperr.PayloadTooLarge {
		// Echo's body limit refused the declared length, or strictJSON found the body over it
		// while reading: answer without reading the rest (closeUnread), so a client declaring
		// 100 KB and sending slowly does not wait for net/http to drain it.
		_ = closeUnread(c, nil)
	}
	s.writeProblem(c, p)
}

// toProblem classifies err: an expected refusal as it is, Redis trouble as 503, Echo's own
// errors by status, anything else as a 500 whose cause is only logged.
func (s *Server) toProblem(c echo.Context, err error) *apperr.Error {
	if p, ok := apperr.As(err); ok {
		if p.Kind == apperr.Internal {
			s.logInternal(c, err)
			return apperr.New(apperr.Internal, "")
		}
		if p.Kind == apperr.Unavailable && p.RetryAfter == 0 {
			p.RetryAfter = s.RetryAfter
		}
		return p
	}
	if p := s.unavailable(err, "Redis is unreachable, busy or moving data; retry shortly."); p != nil {
		s.Logger.WarnContext(c.Request().Context(), "redis unavailable", "route", c.Path(), "request_id", requestID(c), "err", err)
		return p
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if he.Internal != nil {
			if p, ok := apperr.As(he.Internal); ok {
				return p
			}
		}
		return s.fromHTTPError(c, he)
	}
	if errors.Is(err, context.Canceled) {
		return &apperr.Error{Kind: apperr.Unavailable, Detail: "The request was cancelled.", RetryAfter: s.RetryAfter}
	}
	s.logInternal(c, err)
	return apperr.New(apperr.Internal, "")
}

// unavailable is the one mapping from "Redis cannot serve right now" (store.IsUnavailable:
// unreachable, busy, timed out, moving slots) to its answer: 503 unavailable with Retry-After,
// detail saying what could not be done. It is nil for any other error.
func (s *Server) unavailable(err error, detail string) *apperr.Error {
	if !store.IsUnavailable(err) {
		return nil
	}
	return &apperr.Error{Kind: apperr.Unavailable, Detail: detail, RetryAfter: s.RetryAfter, Cause: err}
}

func (s *Server) fromHTTPError(c echo.Context, he *echo.HTTPError) *apperr.Error {
	msg := ""
	if m, ok := he.Message.(string); ok {
		msg = m
	}
	switch he.Code {
	case http.StatusNotFound:
		return apperr.New(apperr.NotFound, "No route matches "+bounded(c.Request().Method, 32)+" "+safePath(c.Request().URL.Path)+
			": the operations are listed at /docs and /openapi.yaml.")
	case http.StatusMethodNotAllowed:
		if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
			return apperr.Newf(apperr.MethodNotAllowed, "%s is not a method of this path: send %s.", bounded(c.Request().Method, 32), allow)
		}
		return apperr.New(apperr.MethodNotAllowed, "The method is not allowed on this path.")
	case http.StatusRequestEntityTooLarge:
		return apperr.Newf(apperr.PayloadTooLarge, "The request body exceeds %d bytes.", s.BodyLimitBytes)
	case http.StatusUnsupportedMediaType:
		return apperr.New(apperr.UnsupportedMediaType, "Send the content type the contract names for this operation.")
	case http.StatusBadRequest:
		// Echo's binder: malformed JSON or a type mismatch. Its message names the offset or field.
		return apperr.New(apperr.Validation, bindDetail(msg))
	case http.StatusUnauthorized:
		return apperr.New(apperr.Unauthenticated, "")
	case http.StatusForbidden:
		return apperr.New(apperr.InsufficientScope, "")
	case http.StatusServiceUnavailable:
		return &apperr.Error{Kind: apperr.Unavailable, RetryAfter: s.RetryAfter}
	}
	if he.Code >= 500 {
		s.logInternal(c, he)
		return apperr.New(apperr.Internal, "")
	}
	return &apperr.Error{Kind: apperr.Blank(he.Code), Detail: msg}
}

func (s *Server) logInternal(c echo.Context, err error) {
	s.Logger.ErrorContext(c.Request().Context(), "internal error", "route", c.Path(), "method", c.Request().Method,
		"request_id", requestID(c), "err", err)
}

func (s *Server) writeProblem(c echo.Context, p *apperr.Error) {
	body := problemBody{
		Type: p.Kind.Type(s.PublicURL), Title: p.Kind.Title, Status: p.Kind.Status, Detail: p.Detail,
		Instance: safePath(c.Request().URL.Path), RequestID: requestID(c), Errors: p.Fields,
	}
	h := c.Response().Header()
	if p.RetryAfter > 0 {
		secs := int((p.RetryAfter + 999_999_999) / 1_000_000_000)
		body.RetryAfter = secs
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	if p.Kind.Status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Bearer realm="hashgate"`)
	}
	h.Set("Cache-Control", "no-store")
	h.Set(echo.HeaderContentType, "application/problem+json")
	c.Response().WriteHeader(p.Kind.Status)
	if c.Request().Method == http.MethodHead {
		return
	}
	out, err := marshalProblem(body, p.Extra)
	if err != nil {
		typ, _ := json.Marshal(apperr.Internal.Type(s.PublicURL))
		out = []byte(`{"type":` + string(typ) + `,"title":"Internal server error","status":500}`)
	}
	_, _ = c.Response().Write(out)
}

func marshalProblem(body problemBody, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// safePath bounds the echoed path so a hostile URL cannot bloat or inject into the body.
func safePath(p string) string { return bounded(p, 256) }

// bounded cuts s to at most n bytes, then replaces invalid UTF-8 (a character the cut split,
// or bytes the caller sent), so what reaches a problem body is valid UTF-8.
func bounded(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func bindDetail(msg string) string {
	if msg == "" {
		return "The request body is not valid JSON for this operation."
	}
	return bounded(msg, 300)
}

func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
