package sessionstore

import (
	"context"
	"errors"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// How session operations call their scripts and classify failures: through the kit
// (repo.RunScript, repo.CommandError: unavailable → 503, a key of the wrong type → corrupt),
// a corrupt session also counted and logged by key pattern.

// run executes a session script on the store's client (repo.RunScript); NOT_FOUND and EXISTS
// carry no payload in any session script, so a reply holding one is counted as a script error.
func (r *Sessions) run(ctx context.Context, name string, l *rueidis.Lua, keys, args []string) (repo.Reply, error) {
	return r.runOn(ctx, r.client, name, l, keys, args)
}

// runOn is run on c (the pinned connection of a durable write).
func (r *Sessions) runOn(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, keys, args []string) (repo.Reply, error) {
	rep, err := repo.RunScript(ctx, c, r.metrics, name, name, l, keys, args)
	if err != nil {
		return repo.Reply{}, r.noteCorrupt(ctx, name, err)
	}
	if err := rep.Bare(repo.CodeNotFound, repo.CodeExists); err != nil {
		return repo.Reply{}, r.badReply(ctx, name, err)
	}
	return rep, nil
}

// readErr classifies a failed read of a session key as the kit does (repo.CommandError).
func (r *Sessions) readErr(ctx context.Context, op string, err error) error {
	return r.noteCorrupt(ctx, op, repo.CommandError(op, err))
}

// noteCorrupt counts and logs (by key pattern, never a value) a session found corrupt by the
// Redis side (a key of the wrong type where a session belongs), and returns err.
func (r *Sessions) noteCorrupt(ctx context.Context, op string, err error) error {
	if errors.Is(err, repo.ErrCorrupt) {
		r.metrics.Read(ctx, sessObject, repo.Corrupt)
		r.log.WarnContext(ctx, "session key holds the wrong type", "key_pattern", r.keyPattern(), "op", op)
	}
	return err
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
