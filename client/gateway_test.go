package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/app"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestMain serves the whole gateway (internal/app, as the binary builds it) on the embedded
// store for the examples and tests of this package, and points baseURL and adminToken at it.
// The client runs against real Redis in the end-to-end tests of cmd/gateway and cmd/bench.
func TestMain(m *testing.M) {
	stop, err := startGateway()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests: start the gateway:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func startGateway() (stop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := config.Load(func(string) string { return "" }) // the documented defaults
	if err != nil {
		return nil, err
	}
	s, err := store.Open(ctx, store.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	if err := s.LoadScripts(ctx, app.ScriptBodies()...); err != nil {
		s.Close()
		return nil, err
	}
	g, err := app.New(cfg, s, app.Options{})
	if err != nil {
		s.Close()
		return nil, err
	}
	admin, err := g.Tokens.Mint(ctx, tokens.MintRequest{Tenant: cfg.BootstrapTenant, Subject: "bootstrap-admin",
		TokenType: tokens.TypeService, Scopes: auth.KnownScopes(), TTL: time.Hour})
	if err != nil {
		s.Close()
		return nil, err
	}
	g.Start()
	srv := httptest.NewServer(g.Echo)
	baseURL, adminToken = srv.URL, admin.Token
	return func() { srv.Close(); g.Stop(); s.Close() }, nil
}
