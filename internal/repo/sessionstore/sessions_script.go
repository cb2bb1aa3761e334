package sessionstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

// How session operations call their scripts and classify failures (unavailable, wrong key
// type, a reply of the wrong shape).

// run executes a session script and decodes its reply (reply.go). A driver failure is
// classified by scriptErr; a reply that breaks its script's declared shape is counted as a
// script error. NOT_FOUND and EXISTS carry no payload in any session script.
func (r *Sessions) run(ctx context.Context, name string, l *rueidis.Lua, keys, args []string) (repo.Reply, error) {
	return r.runOn(ctx, r.client, name, l, keys, args)
}

// runOn is run on c (the pinned connection of a durable write).
func (r *Sessions) runOn(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, keys, args []string) (repo.Reply, error) {
	rep, err := repo.CallScript(ctx, c, name, l, keys, args)
	if err != nil {
		return repo.Reply{}, r.scriptErr(ctx, name, err)
	}
	r.relay(keys)
	if err := rep.Bare(repo.CodeNotFound, repo.CodeExists); err != nil {
		return repo.Reply{}, r.badReply(ctx, name, err)
	}
	return rep, nil
}

// scriptErr classifies a script failure: connectivity → unavailable; anything else is a Lua
// transition error, counted by script. A key of the wrong type where a session belongs is a
// corrupt session (refused, never served).
func (r *Sessions) scriptErr(ctx context.Context, name string, err error) error {
	if store.IsUnavailable(err) {
		return repo.CommandError(name, err)
	}
	r.metrics.ScriptError(ctx, name)
	return r.readErr(ctx, name, err)
}

// readErr classifies a failed read of a session key: a key of the wrong type is a corrupt
// session (counted, logged by key pattern); anything else as redisErr does.
func (r *Sessions) readErr(ctx context.Context, op string, err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok && strings.Contains(re.Error(), "WRONGTYPE") {
		r.metrics.Read(ctx, sessObject, repo.Corrupt)
		r.log.WarnContext(ctx, "session key holds the wrong type", "key_pattern", r.keyPattern(), "op", op)
		return fmt.Errorf("%s: %w: wrong key type", op, repo.ErrCorrupt)
	}
	return repo.CommandError(op, err)
}

// cachedArray reads an HMGET sent through rueidis' cache, counting a cache hit or miss: its
// values and whether the gateway's copy answered.
func (r *Sessions) cachedArray(ctx context.Context, res rueidis.RedisResult) ([]rueidis.RedisMessage, bool, error) {
	hit := res.IsCacheHit()
	if hit {
		r.hits.Add(1)
	} else {
		r.misses.Add(1)
	}
	vals, err := res.ToArray()
	if err != nil {
		return nil, hit, r.readErr(ctx, "session authorize", err)
	}
	return vals, hit, nil
}

// badReply counts a reply of the wrong shape (err wraps ErrReply) as a script error.
func (r *Sessions) badReply(ctx context.Context, name string, err error) error {
	return repo.BadReply(ctx, r.metrics, name, err)
}
