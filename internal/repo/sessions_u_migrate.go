package repo

import (
	"context"
	"errors"

	"github.com/redis/rueidis"
)

// migrate moves every session of the user with tag that a per-session gateway wrote (its hash
// and the device index member) into the user's hash, on c.
// PLACEHOLDER (branch s6-userhash): the helper building session_migrate.lua replaces this body.
func (r *Sessions) migrate(ctx context.Context, c rueidis.Client, tag string) error {
	_, _, _ = ctx, c, tag
	return errors.New("session migrate: not built yet")
}
