package eventstore

import "context"

// Test helpers: Sweep relays every pending event of every node: a full pass, for the tests (the gateway
// sweeps a bounded step at a time).
func (r *Relay) Sweep(ctx context.Context) error {
	for _, node := range r.s.client.Nodes() {
		if _, err := r.scanNode(ctx, node, 0, -1); err != nil {
			return err
		}
	}
	return nil
}

// RelayOutbox relays one user's pending events (RelayUsers of one), for the tests.
func (s *Store) RelayOutbox(ctx context.Context, userTag string) (int, error) {
	return s.RelayUsers(ctx, []string{userTag})
}
