package handlers_test

import (
	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/handlers"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/store"
)

// The handler tests build their gateway through internal/app, the one composition root, as
// cmd/gateway and the fault suites do. This external test package may import app (which
// imports handlers); the harness in package handlers calls it through BuildGatewayForTest.
func init() {
	handlers.BuildGatewayForTest = buildGateway
}

func buildGateway(s *store.Store, tg handlers.TestGateway) (*handlers.Server, *echo.Echo, error) {
	cfg, err := config.Load(func(string) string { return "" }) // the documented defaults
	if err != nil {
		return nil, nil, err
	}
	cfg.KeyPrefix = tg.Prefix
	if sessionstore.Hosts(s.Caps, sessionstore.LayoutPerUser) != nil {
		cfg.SessionLayout = "per-session" // Redis 7.0: the default per-user layout would not start
	}
	if tg.Config != nil {
		tg.Config(&cfg)
	}
	if tg.Auth == nil {
		if tg.Auth, _, err = app.FreshKeys(cfg); err != nil {
			return nil, nil, err
		}
	}
	g, err := app.New(cfg, s, app.Options{Telemetry: tg.Telemetry, Version: "test", Spec: []byte("openapi: 3.0.3\n"),
		Auth: tg.Auth, Hasher: tg.Hasher, Override: tg.Override})
	if err != nil {
		return nil, nil, err
	}
	return g.Server, g.Echo, nil
}
