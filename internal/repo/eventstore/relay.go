package eventstore

import (
	"context"
	"embed"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
)

// The relay: session events are written by the session scripts into the user's outbox (the
// user's tag, the slot of the session keys) and copied from there into the tenant's stream
// (another slot) by relay.lua, exactly once: the script skips what the tenant's checkpoint for
// that user says was copied, and the entries copied are deleted from the outbox afterwards
// (outbox_ack.lua, which deletes the emptied outbox). A
// gateway that dies between the copy and the delete leaves entries the next relay skips; one
// that dies before the copy leaves entries the next relay copies — triggered by the user's next
// session write on any gateway, or found by the sweep every GATEWAY_EVENTS_RELAY_INTERVAL.

//go:embed *.lua
var scriptFiles embed.FS

var (
	scriptRelay = repo.LoadScript(scriptFiles, "relay")
	scriptAck   = repo.LoadScript(scriptFiles, "outbox_ack")
)

const (
	// relayBatch bounds the outbox entries one relay call copies.
	relayBatch = 100
	// pendingMax bounds the users waiting for the relay worker; beyond it a notification is
	// dropped and the sweep relays that outbox.
	pendingMax = 10000
	// scanCount is the SCAN hint of the sweep.
	scanCount = 1000
)

// RelayOutbox copies userTag's outbox into its tenant's stream and deletes what it copied; it
// returns how many events it copied. Safe to run concurrently, on any gateway, any number of
// times.
func (s *Store) RelayOutbox(ctx context.Context, userTag string) (int, error) {
	total := 0
	outbox := s.keys.EventOutbox(userTag)
	for {
		entries, err := s.client.Do(ctx, s.client.B().Xrange().Key(outbox).Start("-").End("+").Count(relayBatch).Build()).AsXRange()
		if err != nil && !rueidis.IsRedisNil(err) {
			return total, repo.CommandError("events outbox", err)
		}
		if len(entries) == 0 { // an outbox emptied within its last id's millisecond: delete it now
			_, err := repo.RunScript(ctx, s.client, s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, []string{outbox}, nil)
			return total, err
		}
		tenant := entries[0].FieldValues[events.FieldTenant]
		args := []string{events.Envelope(ctx, tenant, s.retention), strconv.FormatInt(2*s.retention.MaxAge.Milliseconds(), 10)}
		ids := make([]string, 0, len(entries))
		for _, e := range entries {
			if e.FieldValues[events.FieldTenant] != tenant {
				break // (one user, one tenant: never expected)
			}
			ids = append(ids, e.ID)
			args = append(args, e.ID, strconv.Itoa(2*len(e.FieldValues)))
			for k, v := range e.FieldValues {
				args = append(args, k, v)
			}
		}
		tag := s.hasher.TenantTag(tenant)
		rep, err := s.runRelay(ctx, []string{s.keys.EventStream(tag), s.keys.EventRelayed(tag, userTag)}, args)
		if err != nil {
			return total, err
		}
		copied, err := rep.Strs(1)
		if err != nil || rep.Code() != repo.CodeOK {
			return total, fmt.Errorf("events relay: %w", repo.ErrReply)
		}
		total += len(copied)
		s.auditCopied(ctx, entries, copied)
		if _, err := repo.RunScript(ctx, s.client, s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, []string{outbox}, ids); err != nil {
			return total, err
		}
		if len(entries) < relayBatch {
			return total, nil
		}
	}
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
// write), the sweep finds every outbox left behind.
type Relay struct {
	s        *Store
	interval time.Duration
	mu       sync.Mutex
	pending  map[string]struct{}
	wake     chan struct{}
}

// NewRelay returns the background relay over s, sweeping every interval.
func NewRelay(s *Store, interval time.Duration) *Relay {
	return &Relay{s: s, interval: interval, pending: map[string]struct{}{}, wake: make(chan struct{}, 1)}
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

// Run relays notified outboxes as they come and sweeps every interval (±10%), until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	next := time.After(r.jitter())
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.drain(ctx)
		case <-next:
			if err := r.Sweep(ctx); err != nil {
				r.s.log.WarnContext(ctx, "events relay sweep", "err", err)
			}
			next = time.After(r.jitter())
		}
	}
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
	for _, t := range tags {
		if _, err := r.s.RelayOutbox(ctx, t); err != nil && ctx.Err() == nil {
			r.s.log.WarnContext(ctx, "events relay", "err", err)
		}
	}
}

// Sweep relays every outbox on every node (SCAN for the outbox key pattern).
func (r *Relay) Sweep(ctx context.Context) error {
	prefix := r.s.keys.Prefix + ":v1:evoutbox:{"
	for _, node := range r.s.client.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(scanCount).Type("stream").Build()).AsScanEntry()
			if err != nil {
				return repo.CommandError("events sweep", err)
			}
			for _, k := range e.Elements {
				tag := strings.TrimSuffix(strings.TrimPrefix(k, prefix), "}")
				if _, err := r.s.RelayOutbox(ctx, tag); err != nil {
					return err
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}
