package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashgate/hashgate/internal/store"
)

// GetHealthz is liveness: the process answers; Redis is not touched.
func (s *Server) GetHealthz(ctx context.Context, _ GetHealthzRequestObject) (GetHealthzResponseObject, error) {
	return GetHealthz200JSONResponse{Status: HealthStatusOk}, nil
}

// GetReadyz pings Redis (every master in a cluster) and reports the detected capabilities.
func (s *Server) GetReadyz(ctx context.Context, _ GetReadyzRequestObject) (GetReadyzResponseObject, error) {
	d, err := s.Store.Ping(ctx)
	if err != nil {
		s.Logger.WarnContext(ctx, "readiness check failed", "err", err)
		// A failed ping is unavailability whatever its cause.
		return nil, s.unavailable(fmt.Errorf("readiness ping: %w: %w", store.ErrUnavailable, err), "Redis does not answer.")
	}
	ms := float64(d.Microseconds()) / 1000
	info := RedisInfo{
		Topology:      RedisInfoTopology(s.Caps.Topology),
		FieldExpiry:   RedisInfoFieldExpiry(s.Caps.FieldExpiry),
		ServerVersion: s.Caps.ServerVersion,
		Embedded:      s.Caps.Embedded,
		LatencyMs:     &ms,
	}
	if t, ok := s.Store.(topologyReporter); ok {
		if p := t.Primary(); p != "" {
			info.Primary = &p
		}
		mode := t.DurableMode()
		info.DurableReplicas = &mode
	}
	return GetReadyz200JSONResponse{Status: ReadinessStatusOk, Version: &s.Version, Redis: info}, nil
}

// topologyReporter is what /readyz reports beyond the ping when the store can tell (the real
// store; test fakes need not): the current primary and the durability in force.
type topologyReporter interface {
	Primary() string
	DurableMode() string
}

// GetOpenAPI serves the contract this server was generated from.
func (s *Server) GetOpenAPI(ctx context.Context, _ GetOpenAPIRequestObject) (GetOpenAPIResponseObject, error) {
	return GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(s.Spec), ContentLength: int64(len(s.Spec))}, nil
}

// GetJWKS publishes every verification key.
func (s *Server) GetJWKS(ctx context.Context, _ GetJWKSRequestObject) (GetJWKSResponseObject, error) {
	raw, err := s.Auth.Keys().JWKS()
	if err != nil {
		return nil, err
	}
	var set JWKS
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, err
	}
	return GetJWKS200JSONResponse(set), nil
}
