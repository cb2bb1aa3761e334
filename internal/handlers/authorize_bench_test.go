package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hashgate/hashgate/internal/sessions"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// The forward-auth hot path, GET /v1/authorize by session token, through the whole Echo stack
// (request id, telemetry middleware, spec validation and authentication, the handler, the
// renderer) on standalone Redis 8, beside the two baselines of the benchmark issue measured in
// the same run:
//
//	BenchmarkAuthorizeCeiling   an Echo handler answering the same JSON and X-Auth-* headers,
//	                            no Redis: the HTTP ceiling
//	BenchmarkAuthorizeNaive     the naive design: HGETALL the session hash, then HSET lastSeen
//	                            + EXPIRE (one pipeline), on every request
//	BenchmarkAuthorizeUncached  the gateway with the client-side cache off: one script
//	BenchmarkAuthorizeCached    the gateway with the cache on (GATEWAY_SESSION_CACHE_TTL's
//	                            default): no round trip for a hot session
//
// Each has a serial and a parallel run; redis-cmds/op is the commands each request sent.
//
//	source .cache/redis/env.sh && go test -run '^$' -bench 'BenchmarkAuthorize' -benchmem ./internal/handlers/
func BenchmarkAuthorizeCeiling(b *testing.B) {
	e := echo.New()
	body := AuthorizeResult{Subject: "alice", TenantId: "acme", AuthLevel: AuthLevelBASIC}
	sid := "s_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAA"
	body.SessionId = &sid
	e.GET("/v1/authorize", func(c echo.Context) error {
		if c.Request().Header.Get(SessionHeaderName) == "" {
			return c.NoContent(http.StatusUnauthorized)
		}
		benchAuthHeaders(c, string(body.AuthLevel), sid)
		return c.JSON(http.StatusOK, body)
	})
	benchServe(b, e, "hgs_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil)
}

func BenchmarkAuthorizeNaive(b *testing.B) {
	s := benchRedis8(b)
	key := testredis.Prefix(b) + ":naive:session:bench"
	ctx := context.Background()
	c := s.Client
	if err := c.Do(ctx, c.B().Hset().Key(key).FieldValue().FieldValue("userId", "alice").FieldValue("tenantId", "acme").
		FieldValue("status", "ACTIVE").FieldValue("authLevel", "BASIC").FieldValue("lastSeen", "0").Build()).Error(); err != nil {
		b.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Expire().Key(key).Seconds(600).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	e := echo.New()
	e.GET("/v1/authorize", func(ec echo.Context) error {
		ctx := ec.Request().Context()
		m, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil || len(m) == 0 {
			return ec.NoContent(http.StatusUnauthorized)
		}
		for _, r := range c.DoMulti(ctx,
			c.B().Hset().Key(key).FieldValue().FieldValue("lastSeen", strconv.FormatInt(time.Now().UnixMilli(), 10)).Build(),
			c.B().Expire().Key(key).Seconds(600).Build()) {
			if r.Error() != nil {
				return ec.NoContent(http.StatusServiceUnavailable)
			}
		}
		sid := "s_naive"
		benchAuthHeaders(ec, m["authLevel"], sid)
		return ec.JSON(http.StatusOK, AuthorizeResult{Subject: m["userId"], TenantId: m["tenantId"], AuthLevel: AuthLevel(m["authLevel"]), SessionId: &sid})
	})
	benchServe(b, e, "x", nil)
}

func BenchmarkAuthorizeUncached(b *testing.B) { benchGateway(b, 0) }

func BenchmarkAuthorizeCached(b *testing.B) { benchGateway(b, 2*time.Second) }

// benchGateway serves /v1/authorize through the gateway's stack with the session hot path's
// cache TTL cacheTTL (0: off).
func benchGateway(b *testing.B, cacheTTL time.Duration) {
	s := benchRedis8(b)
	prefix := testredis.Prefix(b)
	svc, counter := newSessionService(b, s, prefix, cacheTTL)
	e := newHarnessOn(b, s, prefix, nil, func(_ *harness, d *Deps) { d.Sessions, d.SessionAuth = svc, svc }).e
	is, err := svc.Create(context.Background(), "acme", sessions.CreateInput{UserID: "alice", AuthLevel: "BASIC"})
	if err != nil {
		b.Fatal(err)
	}
	benchServe(b, e, is.Token, counter)
	if hits, misses := svc.CacheStats(); hits+misses > 0 {
		b.Logf("cache: %d hits, %d misses", hits, misses)
	}
}

// benchServe runs GET /v1/authorize with token on e, serially and in parallel.
func benchServe(b *testing.B, e http.Handler, token string, counter *testredis.Recorder) {
	serve := func(b *testing.B) {
		req := httptest.NewRequest("GET", "/v1/authorize", nil)
		req.Header.Set(SessionHeaderName, token)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Auth-Subject") != "alice" {
			b.Fatalf("authorize: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
	}
	serve(b) // warm: the first request fills the cache
	report := func(b *testing.B, n int) {
		if counter != nil && n > 0 {
			b.ReportMetric(float64(counter.Sent())/float64(n), "redis-cmds/op")
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		if counter != nil {
			counter.Reset()
		}
		n := 0
		for b.Loop() {
			serve(b)
			n++
		}
		report(b, n)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		if counter != nil {
			counter.Reset()
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				serve(b)
			}
		})
		report(b, b.N)
	})
}

func benchAuthHeaders(c echo.Context, level, sid string) {
	h := c.Response().Header()
	h.Set("X-Auth-Subject", "alice")
	h.Set("X-Auth-Tenant", "acme")
	h.Set("X-Auth-Level", level)
	h.Set("X-Auth-Session", sid)
	h.Set("Cache-Control", "no-store")
}

// benchRedis8 opens standalone Redis 8 (client-side caching on, as the gateway runs), or skips.
func benchRedis8(b *testing.B) *store.Store {
	for _, be := range testredis.Backends() {
		if be.Name == "redis8" {
			return testredis.Open(b, be)
		}
	}
	b.Skip("no redis8 backend")
	return nil
}
