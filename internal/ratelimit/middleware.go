package ratelimit

import (
	"github.com/labstack/echo/v4"
)

// Middleware counts every request that identify names (an empty identifier skips the limit)
// and refuses the ones over the policy with a 429 problem carrying Retry-After and the IETF
// headers; allowed responses carry the headers too. When Redis cannot answer, the request
// fails (503 through the error handler): the limiter fails closed.
func Middleware(l *Limiter, identify func(c echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := identify(c)
			if id == "" {
				return next(c)
			}
			d, err := l.Allow(c.Request().Context(), id)
			if err != nil {
				return err
			}
			if err := d.Err(); err != nil {
				return err
			}
			h := c.Response().Header()
			for k, v := range d.Headers() {
				h.Set(k, v)
			}
			return next(c)
		}
	}
}
