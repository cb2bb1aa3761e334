package store

import (
	"context"

	"github.com/redis/rueidis"
)

// The start-up questions (detect, LoadScripts) and nodes that cannot be reached. Right after a
// cluster master crashes the client still lists it (as a master until the others mark it
// failed, then among the seed addresses), and it sends a keyless command to any node it knows:
// a gateway starting in that window asks the nodes that answer instead of giving up.

// askAny sends the keyless command cmd builds to the nodes one after the other until one
// answers (a Redis error is an answer); the result is unavailability only when none could be
// reached.
func (s *Store) askAny(ctx context.Context, cmd func(rueidis.Client) rueidis.Completed) rueidis.RedisResult {
	nodes := s.raw.Nodes()
	if len(nodes) == 0 {
		return s.Client.Do(ctx, cmd(s.Client))
	}
	var last rueidis.RedisResult
	for _, n := range nodes {
		c, cancel := context.WithTimeout(ctx, s.Timeout)
		last = n.Do(c, cmd(n))
		cancel()
		if !IsUnavailable(last.Error()) {
			return last
		}
	}
	return last
}

// eachReachable runs fn on every node and skips those fn finds unreachable, as long as one
// node answered; any other error ends the walk. Each caller says why it can do without a node
// that is down.
func (s *Store) eachReachable(fn func(addr string, n rueidis.Client) error) error {
	var unreachable error
	answered := false
	for addr, n := range s.raw.Nodes() {
		switch err := fn(addr, n); {
		case err == nil:
			answered = true
		case IsUnavailable(err):
			unreachable = err
		default:
			return err
		}
	}
	if !answered {
		return unreachable
	}
	return nil
}
