package faults

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/testredis"
)

// Redis stops answering without closing connections — its process paused (SIGSTOP), or busy in
// DEBUG SLEEP — while clients authorize sessions, read quotes, create quotes and ask /readyz. Every answer
// is a 2xx or a 503 problem with Retry-After within the Redis timeout plus a margin: deadlines
// hold. When Redis answers again the gateway recovers by itself, and the writes it
// acknowledged are there.
func TestSlowRedis(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	for _, tc := range []struct {
		name  string
		extra []string
		// freeze makes Redis unresponsive; the function it returns waits until it answers again.
		freeze func(t *testing.T, srv *testredis.Server) (thaw func())
	}{
		{name: "paused process", freeze: func(t *testing.T, srv *testredis.Server) func() {
			srv.Pause()
			return srv.Resume
		}},
		{name: "DEBUG SLEEP", extra: []string{"--enable-debug-command", "local"},
			freeze: func(t *testing.T, srv *testredis.Server) func() {
				c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(srv.Port)},
					ForceSingleClient: true, DisableCache: true, DisableRetry: true})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					done <- c.Do(ctx, c.B().Arbitrary("DEBUG", "SLEEP", "3").Build()).Error()
				}()
				return func() {
					if err := <-done; err != nil {
						t.Errorf("DEBUG SLEEP: %v", err)
					}
					c.Close()
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testredis.StartServer(t, tc.extra...)
			bound := timeout + 500*time.Millisecond
			g := startGateway(t, srv.URL(), timeout)
			bearer := g.bearer("t-slow", "quotes:read", "quotes:write", "sessions:write")
			s, _, err := g.createSession(bearer, "user-slow")
			if err != nil {
				t.Fatal(err)
			}
			q, _, err := g.createQuote(bearer, "customer-slow")
			if err != nil {
				t.Fatal(err)
			}

			l := newLoad(t)
			wl := &writeLog{}
			l.spawn(func() { writer(g, l, wl, bearer, 0, bound) })
			l.spawn(func() {
				for i := 0; i < maxLoops && !l.stopped(); i++ {
					r, err := g.authorize(s)
					wl.record(l, r, err, bound)
					r, err = g.getQuote(bearer, q)
					wl.record(l, r, err, bound)
					r = g.do("GET", "/readyz", nil)
					if r.status == http.StatusOK {
						err = nil
					} else {
						err = fmt.Errorf("readyz: %s", r)
					}
					wl.record(l, r, err, bound)
				}
			})
			pollUntil(t, 20*time.Second, "requests served before the freeze", func() bool { return wl.acked.Load() >= 20 })

			thaw := tc.freeze(t, srv)
			refused := wl.refused.Load()
			pollUntil(t, 20*time.Second, "503s while Redis is frozen", func() bool { return wl.refused.Load() >= refused+4 })
			thaw()

			served := wl.acked.Load()
			pollUntil(t, 20*time.Second, "requests served after the thaw", func() bool { return wl.acked.Load() >= served+20 })
			g.waitReady(t, 10*time.Second)
			l.halt()
			l.check(t)
			t.Logf("%s: %d requests, %d answered 503 (slowest %v, bound %v)", tc.name, l.attempts.Load(), wl.refused.Load(),
				time.Duration(wl.slowest.Load()).Round(time.Millisecond), bound)
			wl.readAllBack(t, g, bearer)
		})
	}
}
