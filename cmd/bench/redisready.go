package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Waiting for the benchmark's Redis servers to be ready to measure.

// replicaServing waits until the primary counts the replica online and the replica has its
// link up and no load in progress, for at most within.
func replicaServing(ctx context.Context, primary, replica rueidis.Client, within time.Duration) error {
	deadline := time.Now().Add(within)
	for !strings.Contains(infoField(ctx, primary, "replication", "slave0"), "state=online") ||
		infoField(ctx, replica, "replication", "master_link_status") != "up" || infoField(ctx, replica, "persistence", "loading") != "0" {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the replica was not serving within %s", within)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// waitRewrite waits (at most rewriteWait) until the benchmark's Redis has no append-only file
// rewrite or snapshot in progress: after a scale batch of 900,000 creates the rewrite it
// starts forks and writes the whole dataset while the next rows run, and the 1M Zipf row once
// measured it (its ceiling before 32,526 req/s, after 66,269).
func (b *bench) waitRewrite(ctx context.Context) {
	start := time.Now()
	for busy := true; busy && time.Since(start) < rewriteWait && ctx.Err() == nil; {
		busy = infoField(ctx, b.redis.Client, "persistence", "aof_rewrite_in_progress") == "1" ||
			infoField(ctx, b.redis.Client, "persistence", "aof_rewrite_scheduled") == "1" ||
			infoField(ctx, b.redis.Client, "persistence", "rdb_bgsave_in_progress") == "1"
		if busy {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if d := time.Since(start); d > time.Second {
		b.logf("waited %s for the Redis's append-only file rewrite", d.Round(100*time.Millisecond))
	}
}

// rewriteWait bounds waitRewrite.
const rewriteWait = 3 * time.Minute
