package store

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// timeoutClient bounds every call with a deadline, so a dead or paused Redis never makes a
// request hang. An earlier deadline already on ctx wins.
type timeoutClient struct {
	rueidis.Client
	d time.Duration
}

// WithTimeout decorates c so every Do/DoMulti/DoCache call has at most d.
func WithTimeout(c rueidis.Client, d time.Duration) rueidis.Client {
	return &timeoutClient{Client: c, d: d}
}

func (c *timeoutClient) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= c.d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.d)
}

func (c *timeoutClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.Do(ctx, cmd)
}

func (c *timeoutClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.DoMulti(ctx, multi...)
}

func (c *timeoutClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c *timeoutClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.Client.DoMultiCache(ctx, multi...)
}
