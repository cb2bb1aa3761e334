package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/store/storeerr"
)

// Waiting for Redis at start: docker compose may start the gateway before Redis accepts
// connections, and a gateway restarted during a failover meets a primary that is gone until
// its replica takes over. Either passes within seconds; exiting at once would turn it into a
// crash loop (or a failed deployment) instead.

// Backoff between start attempts: from startRetryFirst, doubling up to startRetryMax.
const (
	startRetryFirst = 200 * time.Millisecond
	startRetryMax   = 2 * time.Second
)

// openStore opens the store and loads the scripts, trying again while Redis cannot be reached
// (storeerr.ErrUnavailable) for at most wait (GATEWAY_REDIS_START_TIMEOUT; 0: one try), with a
// warning per failed attempt. Any other error (a bad URL, a refused password, NOPERM) fails at
// once: waiting cannot cure it. Cancelling ctx (SIGTERM) ends the wait with ctx's error.
func openStore(ctx context.Context, so store.Options, scripts []string, wait time.Duration, log *slog.Logger) (*store.Store, error) {
	deadline := time.Now().Add(wait)
	pause := startRetryFirst
	for attempt := 1; ; attempt++ {
		s, err := openOnce(ctx, so, scripts)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, storeerr.ErrUnavailable) {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			if wait > 0 {
				err = fmt.Errorf("%w (still unreachable after GATEWAY_REDIS_START_TIMEOUT=%s)", err, wait)
			}
			return nil, err
		}
		pause = min(pause, left)
		// The error names the address and the failure, never REDIS_URL's password.
		log.Warn("redis not reachable yet, retrying", "attempt", attempt, "retry_in", pause.Round(time.Millisecond).String(),
			"gives_up_in", left.Round(100*time.Millisecond).String(), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, startRetryMax)
	}
}

// openOnce opens the store and loads the scripts into it.
func openOnce(ctx context.Context, so store.Options, scripts []string) (*store.Store, error) {
	s, err := store.Open(ctx, so)
	if err != nil {
		return nil, err
	}
	if err := s.LoadScripts(ctx, scripts...); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
