package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiler on its own listener (GATEWAY_PPROF_ADDR), never on the API
// port. It returns a function that stops it.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return serveSide("pprof", addr, mux, log)
}

// serveAdmin serves the operator listener (GATEWAY_ADMIN_ADDR: detailed readiness, /metrics);
// "off" serves nothing.
func serveAdmin(addr string, h http.Handler, log *slog.Logger) (func(), error) {
	if addr == "off" {
		log.Info("operator listener off (GATEWAY_ADMIN_ADDR=off): no /metrics, no detailed readiness")
		return func() {}, nil
	}
	return serveSide("operator", addr, h, log)
}

// serveSide serves h on its own listener at addr, apart from the API port, and returns a
// function that stops it.
func serveSide(name, addr string, h http.Handler, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listen %s: %w", name, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info(name+" listener", "addr", ln.Addr().String(), "reach", reach(ln.Addr().String()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
