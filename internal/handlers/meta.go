package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashgate/hashgate/internal/store/storeerr"
)

// GetHealthz is liveness: the process answers; Redis is not touched.
func (s *Server) GetHealthz(ctx context.Context, _ GetHealthzRequestObject) (GetHealthzResponseObject, error) {
	return GetHealthz200JSONResponse{Status: HealthStatusOk}, nil
}

// GetReadyz is readiness on the API port: every Redis primary answers a ping. The status
// only; the details (where Redis is, its version) are the operator listener's (Readiness).
func (s *Server) GetReadyz(ctx context.Context, _ GetReadyzRequestObject) (GetReadyzResponseObject, error) {
	if _, err := s.ping(ctx); err != nil {
		return nil, err
	}
	return GetReadyz200JSONResponse{Status: ReadinessStatusOk}, nil
}

// ReadinessDetail is the operator listener's readiness: the API port's status plus what the
// gateway detected about Redis. Not in the public contract: it tells where Redis is.
type ReadinessDetail struct {
	Status  string     `json:"status"`
	Version string     `json:"version"`
	Redis   RedisState `json:"redis"`
}

// RedisState is what the gateway detected about Redis at start, and the ping's latency.
type RedisState struct {
	Topology        string  `json:"topology"`                  // standalone, cluster or sentinel
	Primary         string  `json:"primary,omitempty"`         // host:port taking writes now (not for a cluster)
	DurableReplicas string  `json:"durableReplicas,omitempty"` // GATEWAY_DURABLE_REPLICAS in force
	Embedded        bool    `json:"embedded"`
	ServerVersion   string  `json:"serverVersion"`
	FieldExpiry     string  `json:"fieldExpiry"` // hsetex, hexpire or fallback
	LatencyMs       float64 `json:"latencyMs"`
}

// Readiness pings Redis (every master in a cluster) and reports the detected capabilities; an
// unreachable Redis is the same 503 error the API port's /readyz answers.
func (s *Server) Readiness(ctx context.Context) (ReadinessDetail, error) {
	d, err := s.ping(ctx)
	if err != nil {
		return ReadinessDetail{}, err
	}
	info := RedisState{
		Topology: string(s.Caps.Topology), FieldExpiry: string(s.Caps.FieldExpiry),
		ServerVersion: s.Caps.ServerVersion, Embedded: s.Caps.Embedded,
		LatencyMs: float64(d.Microseconds()) / 1000,
	}
	if t, ok := s.Store.(topologyReporter); ok {
		info.Primary, info.DurableReplicas = t.Primary(), t.DurableMode()
	}
	return ReadinessDetail{Status: "ok", Version: s.Version, Redis: info}, nil
}

// ping is one readiness ping; a failure is unavailability whatever its cause.
func (s *Server) ping(ctx context.Context) (time.Duration, error) {
	d, err := s.Store.Ping(ctx)
	if err != nil {
		s.Logger.WarnContext(ctx, "readiness check failed", "err", err)
		return 0, s.unavailable(fmt.Errorf("readiness ping: %w: %w", storeerr.ErrUnavailable, err), "Redis does not answer.")
	}
	return d, nil
}

// topologyReporter is what the detailed readiness reports beyond the ping when the store can
// tell (the real store; test fakes need not): the current primary and the durability in force.
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
