package store

import (
	"context"
	"fmt"
)

// LoadScripts runs SCRIPT LOAD for each body on every node, so the first EVALSHA of a script
// finds it and no NOSCRIPT error (and error span) is produced. rueidis.Lua still falls back
// to EVAL if a server restarts and loses its script cache.
func (s *Store) LoadScripts(ctx context.Context, bodies ...string) error {
	for addr, n := range s.raw.Nodes() {
		for _, body := range bodies {
			c, cancel := context.WithTimeout(ctx, 2*s.Timeout)
			err := n.Do(c, n.B().ScriptLoad().Script(body).Build()).Error()
			cancel()
			if err != nil {
				return fmt.Errorf("store: load script on %s: %w", addr, Classify(err))
			}
		}
	}
	return nil
}
