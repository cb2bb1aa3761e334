package app

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/telemetry"
)

// newAdmin is the operator listener's handler (GATEWAY_ADMIN_ADDR, loopback by default): the
// detailed readiness (where Redis is, its version and capabilities) and the Prometheus
// metrics, which the API port does not serve. Its refusals are the API's problems.
func newAdmin(s *handlers.Server, tel *telemetry.Telemetry) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.HTTPErrorHandler
	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", func(c echo.Context) error {
		r, err := s.Readiness(c.Request().Context())
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	})
	if tel != nil {
		e.GET("/metrics", echo.WrapHandler(tel.MetricsHandler()))
	} else {
		e.GET("/metrics", func(c echo.Context) error { return c.String(http.StatusOK, "") })
	}
	return e
}
