package eventstore

import (
	"context"
	"embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
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
	// relayBatch bounds the outbox entries one relay call copies.
	relayBatch = 100
	// relayWorkers bounds the users relayed at once.
	relayWorkers = 8
	// pendingMax bounds the users waiting for the relay worker; beyond it a notification is
	// dropped and the sweep relays that outbox.
	pendingMax = 10000
	// maxCleanupWait is the longest the relay waits for an emptied outbox's clean-up (its
	// last number's millisecond to pass); longer, the next relay or the sweep does it.
	maxCleanupWait = 5 * time.Millisecond
	// finishWithin bounds the relay of what was notified when the gateway stops.
	finishWithin = 5 * time.Second
)

// RelayOutbox copies userTag's pending events into its tenant's stream and deletes what it
// copied; it returns how many events it copied. Safe to run concurrently, on any gateway, any
// number of times.
func (s *Store) RelayOutbox(ctx context.Context, userTag string) (int, error) {
	total := 0
	for {
		b, err := s.outbox.read(ctx, userTag)
		if err != nil {
			return total, err
		}
		if len(b.entries) > 0 {
			n, err := s.relay(ctx, userTag, b.entries)
			if err != nil {
				return total, err
			}
			total += n
		}
		wait, err := s.outbox.ack(ctx, userTag, b)
		if err != nil {
			return total, err
		}
		if wait > 0 && wait <= maxCleanupWait && !b.more {
			time.Sleep(wait)
			_, err = s.outbox.ack(ctx, userTag, batch{retry: true})
			return total, err
		}
		if !b.more {
			return total, nil
		}
	}
}

// relay runs relay.lua over entries (one user's, oldest first) and audits the events it
// copied now.
func (s *Store) relay(ctx context.Context, userTag string, entries []rueidis.XRangeEntry) (int, error) {
	tenant := entries[0].FieldValues[events.FieldTenant]
	args := []string{events.Envelope(ctx, tenant, s.retention), strconv.FormatInt(2*s.retention.MaxAge.Milliseconds(), 10)}
	for _, e := range entries {
		if e.FieldValues[events.FieldTenant] != tenant {
			break // (one user, one tenant: never expected)
		}
		args = append(args, e.ID, strconv.Itoa(2*len(e.FieldValues)))
		for k, v := range e.FieldValues {
			args = append(args, k, v)
		}
	}
	tag := s.hasher.TenantTag(tenant)
	rep, err := s.runRelay(ctx, []string{s.keys.EventStream(tag), s.keys.EventRelayed(tag, userTag)}, args)
	if err != nil {
		return 0, err
	}
	copied, err := rep.Strs(1)
	if err != nil || rep.Code() != repo.CodeOK {
		return 0, fmt.Errorf("events relay: %w", repo.ErrReply)
	}
	s.auditCopied(ctx, entries, copied)
	return len(copied), nil
}

// auditCopied writes the audit line of each event copied now (so once, on the gateway that
// copied it).
func (s *Store) auditCopied(ctx context.Context, entries []rueidis.XRangeEntry, copied []string) {
	if s.audit == nil || len(copied) == 0 {
		return
	}
	now := make(map[string]bool, len(copied))
	for _, id := range copied {
		now[id] = true
	}
	for _, e := range entries {
		if now[e.ID] {
			if ev, err := events.FromEntry(e.ID, e.FieldValues); err == nil {
				s.audit.Event(ctx, ev)
			}
		}
	}
}

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
	// relayWorkers users at a time: one user's relay is a few round trips in a row, so a single
	// worker fell behind a gateway creating thousands of sessions a second.
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(relayWorkers, len(tags)) {
		wg.Go(func() {
			for t := range work {
				if _, err := r.s.RelayOutbox(ctx, t); err != nil && ctx.Err() == nil {
					r.s.log.WarnContext(ctx, "events relay", "err", err)
				}
			}
		})
	}
	for _, t := range tags {
		work <- t
	}
	close(work)
	wg.Wait()
}
