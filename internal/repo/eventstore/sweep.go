package eventstore

import (
	"context"
	"sync"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// The sweep finds pending session events no relay was told about: those of a gateway that died
// between a session write and its relay (a stopping gateway relays what it was told of first,
// Relay.finish), and those of a notification dropped past pendingMax. The writing gateway's
// Notify is the fast path; any later session write of the same user, on any gateway, relays
// them too. The sweep is the backstop: every GATEWAY_EVENTS_RELAY_INTERVAL each gateway
// examines about sweepKeys more keys of each node (SCAN MATCH <the outbox's keys> TYPE, from
// where its last step stopped; per user hash one HMGET of its two counters, pipelined), so its
// cost on Redis is bounded whatever the keyspace's size, and a full pass over N keys of a node
// takes N / sweepKeys intervals (docs/EVENTS.md: 1M keys, 10 s, 50 steps ≈ 8 min).

const (
	// scanCount is the SCAN hint of the sweep.
	scanCount = 1000
	// sweepKeys is about how many keys of each node one sweep step examines.
	sweepKeys = 20000
)

// sweep is where the next step continues on each node.
type sweep struct {
	mu      sync.Mutex
	cursors map[string]uint64 // node address → SCAN cursor
}

// step relays the pending events found among about budget more keys of each node.
func (r *Relay) step(ctx context.Context, budget int) error {
	r.sweep.mu.Lock()
	defer r.sweep.mu.Unlock()
	for addr, node := range r.s.client.Nodes() {
		next, err := r.scanNode(ctx, node, r.sweep.cursors[addr], budget)
		r.sweep.cursors[addr] = next
		if err != nil {
			return err
		}
	}
	return nil
}

// scanNode scans node from cursor for about budget keys (all, budget < 0) and relays the
// users found with pending events; it returns the cursor to continue from (0: the pass ended).
func (r *Relay) scanNode(ctx context.Context, node rueidis.Client, cursor uint64, budget int) (uint64, error) {
	match, typ := r.s.outbox.scan()
	for seen := 0; budget < 0 || seen < budget; seen += scanCount {
		e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(match).Count(scanCount).Type(typ).Build()).AsScanEntry()
		if err != nil {
			return cursor, repo.CommandError("events sweep", err)
		}
		tags, err := r.s.outbox.pending(ctx, node, e.Elements)
		if err != nil {
			return cursor, err
		}
		if _, err := r.s.RelayUsers(ctx, tags); err != nil {
			return cursor, err
		}
		if cursor = e.Cursor; cursor == 0 {
			return 0, nil
		}
	}
	return cursor, nil
}
