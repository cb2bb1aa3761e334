package store

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// LoadScripts runs SCRIPT LOAD for each body on every node, so the first EVALSHA of a script
// finds it and no NOSCRIPT error (and error span) is produced. rueidis.Lua still falls back
// to EVAL if a server restarts and loses its script cache, which is also why a node that
// cannot be reached now is skipped (as long as one node took the scripts).
func (s *Store) LoadScripts(ctx context.Context, bodies ...string) error {
	return s.eachReachable(func(addr string, n rueidis.Client) error {
		for _, body := range bodies {
			c, cancel := context.WithTimeout(ctx, 2*s.Timeout)
			err := n.Do(c, n.B().ScriptLoad().Script(body).Build()).Error()
			cancel()
			if err != nil {
				return fmt.Errorf("store: load script on %s: %w", addr, Classify(err))
			}
		}
		return nil
	})
}
