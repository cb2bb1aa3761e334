package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/config"
	"github.com/hashgate/hashgate/internal/store/storeerr"
	"github.com/hashgate/hashgate/internal/testredis"
)

// background is a gateway serving in a goroutine, not yet known to be ready.
type background struct {
	ready  chan string
	done   chan struct{} // closed once serveWith returned err
	err    error
	cancel context.CancelFunc
	stderr *syncBuffer
}

// serveInBackground starts serveWith on env (loopback listeners) and stops it at cleanup.
func serveInBackground(t *testing.T, env map[string]string) *background {
	t.Helper()
	env["GATEWAY_ADDR"], env["GATEWAY_ADMIN_ADDR"] = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{ready: make(chan string, 1), done: make(chan struct{}), cancel: cancel, stderr: &syncBuffer{}}
	go func() {
		b.err = serveWith(ctx, config.Env{Lookup: func(k string) string { return env[k] }}, nil, &syncBuffer{}, b.stderr, b.ready)
		close(b.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	return b
}

// exited waits up to within for the gateway's result; ok is false when it is still running.
func (b *background) exited(within time.Duration) (err error, ok bool) {
	select {
	case <-b.done:
		return b.err, true
	case <-time.After(within):
		return nil, false
	}
}

// A gateway started before its Redis accepts connections (docker compose starting both at
// once, a restart during a failover) waits for it: it logs one warning per attempt, without
// the password of REDIS_URL, and becomes ready once Redis is up.
func TestGatewayWaitsForRedisToStart(t *testing.T) {
	t.Parallel()
	const password = "startwait-secret-pw"
	srv := testredis.StartServer(t, "--requirepass", password)
	srv.Stop()
	env, _ := redisGatewayEnv(t)
	env["REDIS_URL"] = "redis://:" + password + "@" + srv.Addr()
	g := serveInBackground(t, env)

	if err, ok := g.exited(1500 * time.Millisecond); ok {
		t.Fatalf("the gateway gave up before Redis started: %v\n%s", err, g.stderr)
	}
	srv.Start()
	var addr string
	select {
	case addr = <-g.ready:
	case <-g.done:
		t.Fatalf("gateway exited: %v\n%s", g.err, g.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway not ready 30 s after Redis started\n%s", g.stderr)
	}
	if code, body := get(t, "http://"+addr+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz: %d %s", code, body)
	}
	log := g.stderr.String()
	if !strings.Contains(log, `"level":"WARN","msg":"redis not reachable yet`) || !strings.Contains(log, "connection refused") {
		t.Fatalf("no warning naming the failure while waiting:\n%s", log)
	}
	if strings.Contains(log, password) {
		t.Fatalf("the log shows the Redis password:\n%s", log)
	}
}

// GATEWAY_REDIS_START_TIMEOUT bounds the wait (0: none), SIGTERM ends it at once, and an
// error that waiting cannot cure (a wrong password) fails the start at once.
func TestGatewayRedisStartTimeout(t *testing.T) {
	t.Parallel()
	const closed = "redis://127.0.0.1:1" // nothing listens on port 1
	t.Run("zero fails at once", func(t *testing.T) {
		t.Parallel()
		env, _ := redisGatewayEnv(t)
		env["REDIS_URL"], env["GATEWAY_REDIS_START_TIMEOUT"] = closed, "0"
		err, ok := serveInBackground(t, env).exited(5 * time.Second)
		if !ok || !errors.Is(err, storeerr.ErrUnavailable) {
			t.Fatalf("exited %v with %v; want at once, unavailable", ok, err)
		}
	})
	t.Run("gives up after the timeout", func(t *testing.T) {
		t.Parallel()
		env, _ := redisGatewayEnv(t)
		env["REDIS_URL"], env["GATEWAY_REDIS_START_TIMEOUT"] = closed, "1s"
		start := time.Now()
		err, ok := serveInBackground(t, env).exited(10 * time.Second)
		if !ok || !errors.Is(err, storeerr.ErrUnavailable) || !strings.Contains(err.Error(), "GATEWAY_REDIS_START_TIMEOUT=1s") {
			t.Fatalf("exited %v with %v; want unavailable, naming GATEWAY_REDIS_START_TIMEOUT", ok, err)
		}
		if d := time.Since(start); d < time.Second {
			t.Fatalf("gave up after %v, before the 1s timeout", d)
		}
	})
	t.Run("SIGTERM ends the wait", func(t *testing.T) {
		t.Parallel()
		env, _ := redisGatewayEnv(t)
		env["REDIS_URL"] = closed
		g := serveInBackground(t, env)
		if err, ok := g.exited(time.Second); ok {
			t.Fatalf("exited while Redis was down: %v", err)
		}
		g.cancel()
		if err, ok := g.exited(3 * time.Second); !ok || err != nil {
			t.Fatalf("after SIGTERM: exited %v with %v; want a clean stop at once", ok, err)
		}
	})
	t.Run("wrong password fails at once", func(t *testing.T) {
		t.Parallel()
		srv := testredis.StartServer(t, "--requirepass", "right-password")
		env, _ := redisGatewayEnv(t)
		env["REDIS_URL"] = "redis://:wrong-password@" + srv.Addr()
		err, ok := serveInBackground(t, env).exited(5 * time.Second)
		if !ok || err == nil || errors.Is(err, storeerr.ErrUnavailable) {
			t.Fatalf("exited %v with %v; want at once, not unavailable", ok, err)
		}
	})
}
