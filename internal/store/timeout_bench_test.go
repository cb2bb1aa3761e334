package store

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// answering is a rueidis.Client whose DoMulti answers at once, after looking at the call's
// context the way rueidis does (Err first, then Done while it waits).
type answering struct{ rueidis.Client }

func (answering) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if ctx.Err() != nil {
		panic("context done")
	}
	select {
	case <-ctx.Done():
		panic("context done")
	default:
	}
	return nil
}

// BenchmarkTimeoutDoMulti is what the per-call deadline costs a DoMulti, under a request's
// cancellable context (net/http's): the wrapper alone, the call answered at once.
func BenchmarkTimeoutDoMulti(b *testing.B) {
	c := WithTimeout(answering{}, 500*time.Millisecond)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, cancel := context.WithCancel(context.Background())
			c.DoMulti(req)
			cancel()
		}
	})
}
