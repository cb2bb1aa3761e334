package eventstore

import (
	"context"
	"embed"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashgate/hashgate/internal/repo"
)

// The relay: session events are written by the session scripts where the layout keeps a user's
// pending events (outbox.go: fields of the user's session hash, or the user's outbox stream —
// either under the user's tag, the slot of the session keys) and copied from there into the
// tenant's stream (another slot) by relay.lua, exactly once: the script skips what the
// tenant's checkpoint for that user says was copied, and the events copied are deleted from
// the outbox afterwards (outbox.ack). A gateway that dies between the copy and the delete
// leaves events the next relay skips; one that dies before the copy leaves events the next
// relay copies — triggered by the user's next session write on any gateway, or found by the
// sweep (sweep.go).

//go:embed *.lua
var scriptFiles embed.FS

var scriptRelay = repo.LoadScript(scriptFiles, "relay")

const (
	// relayBatch bounds the outbox entries of one user one read takes.
	relayBatch = 100
	// relayUsers bounds the users one worker relays together (one pipelined read, one
	// relay.lua per tenant, one pipelined ack); relayWorkers bounds the workers at once.
	relayUsers   = 256
	relayWorkers = 4
	// pendingMax bounds the users waiting for the relay worker; beyond it a notification is
	// dropped and the sweep relays that outbox.
	pendingMax = 10000
	// finishWithin bounds the relay of what was notified when the gateway stops.
	finishWithin = 5 * time.Second
)

// Relay runs the relay in the background: Notify asks for one user's outbox (after a session
// write), the sweep finds the outboxes left behind.
type Relay struct {
	s        *Store
	interval time.Duration
	mu       sync.Mutex
	pending  map[string]struct{}
	wake     chan struct{}
	sweep    sweep
}

// NewRelay returns the background relay over s, sweeping a part of the keyspace every interval
// (sweep.go).
func NewRelay(s *Store, interval time.Duration) *Relay {
	return &Relay{s: s, interval: interval, pending: map[string]struct{}{}, wake: make(chan struct{}, 1), sweep: sweep{cursors: map[string]uint64{}}}
}

// Notify asks the worker to relay userTag's outbox soon; it never blocks.
func (r *Relay) Notify(userTag string) {
	r.mu.Lock()
	if len(r.pending) < pendingMax {
		r.pending[userTag] = struct{}{}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays notified outboxes as they come and sweeps a part of the keyspace every interval
// (±10%), until ctx ends; then it relays what it was notified of and not yet relayed, within a
// few seconds.
func (r *Relay) Run(ctx context.Context) {
	defer r.finish()
	next := time.After(r.jitter())
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.drain(ctx)
		case <-next:
			if err := r.step(ctx, sweepKeys); err != nil && ctx.Err() == nil {
				r.s.log.WarnContext(ctx, "events relay sweep", "err", err)
			}
			next = time.After(r.jitter())
		}
	}
}

// finish relays, on shutdown, the outboxes notified and not yet relayed, so a gateway that stops
// leaves none for the sweep.
func (r *Relay) finish() {
	ctx, cancel := context.WithTimeout(context.Background(), finishWithin)
	defer cancel()
	r.drain(ctx)
}

func (r *Relay) jitter() time.Duration {
	return r.interval + time.Duration((rand.Float64()-0.5)*0.2*float64(r.interval))
}

func (r *Relay) drain(ctx context.Context) {
	r.mu.Lock()
	tags := make([]string, 0, len(r.pending))
	for t := range r.pending {
		tags = append(tags, t)
	}
	clear(r.pending)
	r.mu.Unlock()
	// relayUsers users per worker, each a few round trips whatever their number: the users
	// notified while one drain runs are relayed together by the next.
	work := make(chan []string)
	var wg sync.WaitGroup
	for range min(relayWorkers, (len(tags)+relayUsers-1)/relayUsers) {
		wg.Go(func() {
			for chunk := range work {
				if _, err := r.s.RelayUsers(ctx, chunk); err != nil && ctx.Err() == nil {
					r.s.log.WarnContext(ctx, "events relay", "err", err)
				}
			}
		})
	}
	for len(tags) > 0 {
		n := min(relayUsers, len(tags))
		work <- tags[:n]
		tags = tags[n:]
	}
	close(work)
	wg.Wait()
}
