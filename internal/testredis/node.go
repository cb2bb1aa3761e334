package testredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// NodeClient is a plain connection to one Redis node at addr (no cluster redirection, no
// client-side cache, no retry), closed at cleanup: what fault tests read a node's truth with.
func NodeClient(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true,
		DisableCache: true, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Do sends one command on c, bounded by 5 s.
func Do(c rueidis.Client, args ...string) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}
