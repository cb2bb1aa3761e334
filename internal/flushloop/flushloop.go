// Package flushloop runs the background loop of a component that keeps counts in memory and
// writes them to Redis now and then (the rate limiter's admissions, the refusal events): a
// flush every interval or when asked, one last flush when the gateway stops, and the log line
// of a Redis outage written once when flushing starts failing and once when it recovers, not
// on every interval.
package flushloop

import (
	"context"
	"log/slog"
	"time"
)

// FinalTimeout bounds the last flush, made after the loop's context has ended.
const FinalTimeout = time.Second

// Loop describes one component's flushing.
type Loop struct {
	Every time.Duration
	// Wake, when not nil, asks for a flush at once.
	Wake <-chan struct{}
	// Flush writes what is pending; final is set on the last call, after ctx has ended.
	Flush func(ctx context.Context, final bool) error
	// After, when not nil, runs after each flush but the last (housekeeping).
	After func()
	Log   *slog.Logger
	// Failing is logged (a warning, with the error) when flushing starts failing, Recovered
	// (info) when it succeeds again.
	Failing, Recovered string
}

// Run flushes every l.Every (or on l.Wake) until ctx ends, then flushes once more with final
// set, under FinalTimeout.
func (l Loop) Run(ctx context.Context) {
	t := time.NewTicker(l.Every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FinalTimeout)
			_ = l.Flush(fctx, true)
			cancel()
			return
		case <-t.C:
		case <-l.Wake:
		}
		switch err := l.Flush(ctx, false); {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			l.Log.WarnContext(ctx, l.Failing, "err", err)
		case err == nil && failing:
			failing = false
			l.Log.InfoContext(ctx, l.Recovered)
		}
		if l.After != nil {
			l.After()
		}
	}
}
