package handlers

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// NewEcho builds the whole HTTP stack: recover, request id, tracing and metrics, body limit,
// authentication, strict JSON and spec validation (all three over one index of the spec), the
// generated routes, /docs (http_docs.go), and the problem renderer. /metrics is the operator
// listener's (internal/app), not the API port's.
func NewEcho(s *Server, tel *telemetry.Telemetry) (*echo.Echo, error) {
	spec, err := GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("handlers: load embedded spec: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	ix := newSpecIndex(spec)
	allow := ix.allowed()
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		// RFC 9110 §15.5.6: a 405 lists the methods the path has, as the spec gives them.
		if he := (*echo.HTTPError)(nil); errors.As(err, &he) && he.Code == http.StatusMethodNotAllowed && allow[c.Path()] != "" {
			c.Response().Header().Set(echo.HeaderAllow, allow[c.Path()])
		}
		s.HTTPErrorHandler(err, c)
	}
	validate := s.RequestValidator(spec)
	e.Use(chain(
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			DisableStackAll: true,
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				s.Logger.ErrorContext(c.Request().Context(), "panic recovered", "route", c.Path(), "err", err, "stack", string(stack))
				return apperr.Wrap(apperr.Internal, "", err)
			},
		}),
		requestIDMiddleware(),
		telemetry.EchoMiddleware(tel, "hashgate"), // server spans and HTTP metrics
		s.accessLog(),
		middleware.BodyLimit(strconv.FormatInt(s.BodyLimitBytes, 10)+"B"), // its 413 closes the connection: HTTPErrorHandler
		ix.perOperation(func(o specOp) []echo.MiddlewareFunc {
			mws := []echo.MiddlewareFunc{s.authnMiddleware(o), strictJSON(o)}
			if o.ifMatch { // 428 before the validator's generic 400 for a missing header
				mws = append(mws, requireIfMatch)
			}
			if o.query != nil { // a list: unknown query parameters, the Link header's URL (pages.go)
				mws = append(mws, listQuery(o))
			}
			if !o.hot { // a hot route checks its parameters itself (authnMiddleware)
				mws = append(mws, validate)
			}
			return mws
		}),
	))
	si := NewStrictHandler(s, nil)
	RegisterHandlers(e, si)
	w := ServerInterfaceWrapper{Handler: si}
	authorize := w.Authorize
	if sh, ok := si.(*strictHandler); ok && len(sh.middlewares) == 0 {
		authorize = s.authorizeRoute(w)
		e.GET("/v1/authorize", authorize) // (replaces the generated route)
	}
	for _, m := range forwardAuthMethods {
		e.Add(m, "/v1/authorize", authorize)
	}
	registerProblemPages(e, s.PublicURL)
	if err := registerDocs(e); err != nil {
		return nil, fmt.Errorf("handlers: API reference: %w", err)
	}
	return e, nil
}

// allowed maps each route (its Echo path) to the methods the spec gives it, for the Allow
// header of a 405: "DELETE, GET, PATCH".
func (ix specIndex) allowed() map[string]string {
	methods := map[string][]string{}
	for k := range ix {
		m, p, _ := strings.Cut(k, " ")
		methods[p] = append(methods[p], m)
	}
	out := make(map[string]string, len(methods))
	for p, ms := range methods {
		slices.Sort(ms)
		out[p] = strings.Join(ms, ", ")
	}
	return out
}

// chain is mws (outermost first) around the handler the router found, built once: Echo
// applies its e.Use middleware to every request afresh (one closure per middleware per
// request, on the forward-auth hot path too), so the stack is registered as this one
// middleware, whose core calls c.Handler() — the route's handler, or the not-found /
// method-not-allowed one — exactly what Echo would have wrapped.
func chain(mws ...echo.MiddlewareFunc) echo.MiddlewareFunc {
	h := func(c echo.Context) error { return c.Handler()(c) }
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return func(echo.HandlerFunc) echo.HandlerFunc { return h }
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestIDMiddleware keeps a caller's X-Request-Id when it is short and plain (so it cannot
// inject into logs), and makes one otherwise: a random per-process prefix and a counter, unique
// without a random read per request (request ids are correlation handles, not secrets). The
// id is answered in the response's X-Request-Id. (Echo's RequestID middleware did the same with
// a skipper that dropped an unfit id; this one costs the hot path an allocation less.)
func requestIDMiddleware() echo.MiddlewareFunc {
	var b [9]byte
	_, _ = rand.Read(b[:])
	prefix := base64.RawURLEncoding.EncodeToString(b[:]) + "-"
	var n atomic.Uint64
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header
			id := h.Get(echo.HeaderXRequestID)
			if id != "" && !requestIDPattern.MatchString(id) {
				h.Del(echo.HeaderXRequestID)
				id = ""
			}
			if id == "" {
				var buf [32]byte // the 13-character prefix and at most 13 base-36 digits
				id = string(strconv.AppendUint(append(buf[:0], prefix...), n.Add(1), 36))
			}
			c.Response().Header()[echo.HeaderXRequestID] = []string{id} // (the canonical name)
			return next(c)
		}
	}
}

// accessLog writes one line per request at debug level, and at info level for errors and
// slow requests. The route template is logged, never the raw URL (it may carry ids the
// caller considers private) and never a header.
func (s *Server) accessLog() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			d := time.Since(start)
			status := c.Response().Status
			level := slog.LevelDebug
			if status >= 500 || d > time.Second {
				level = slog.LevelInfo
			}
			if s.Logger.Enabled(c.Request().Context(), level) {
				s.Logger.Log(c.Request().Context(), level, "request",
					"method", c.Request().Method, "route", c.Path(), "status", status,
					"duration_ms", float64(d.Microseconds())/1000, "request_id", requestID(c))
			}
			return nil
		}
	}
}
