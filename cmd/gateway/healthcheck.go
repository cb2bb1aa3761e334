package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheck asks the gateway on this host for /healthz: the container image has no curl.
func healthcheck(ctx context.Context, args []string, env environ, stdout io.Writer) error {
	fs := newFlagSet("healthcheck", "exit 0 when the gateway on this host answers /healthz (container healthchecks)")
	envFile := envFileFlag(fs)
	addrFlag := fs.String("addr", "", "the gateway's listen address (default: GATEWAY_ADDR, else :8080, 127.0.0.1:8080 without REDIS_URL)")
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return err
	}
	addr := *addrFlag
	if addr == "" {
		e, err := loadEnv(env, *envFile)
		if err != nil {
			return err
		}
		addr, _ = e.Get("GATEWAY_ADDR")
	}
	if addr == "" {
		addr = ":8080"
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("healthcheck: GATEWAY_ADDR %q: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort("127.0.0.1", port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", resp.StatusCode)
	}
	return nil
}
