// Package eventstore keeps the tenants' event streams in Redis for the event service
// (internal/events), implementing its Store, and relays the users' pending session events into
// them (relay.go, from either outbox.go; the sweep for those left behind, sweep.go). The
// streams are written by the scripts of the changes themselves (the kit's event_append and
// event_outbox snippets); this package only reads them and moves pending events. Keys
// (docs/KEYS.md "Events"):
//
//	<prefix>:v1:events:{<tenantTag>}                     STREAM  the tenant's events
//	<prefix>:v1:sess:{<userTag>}                         HASH    per-user layout: evSeq, ev.<n>, a user's session events not yet relayed
//	<prefix>:v1:evoutbox:{<userTag>}                     STREAM  per-session layout: a user's session events not yet relayed
//	<prefix>:v1:events:{<tenantTag>}:relayed             HASH    per user tag, the last outbox id relayed (servers with field expiration)
//	<prefix>:v1:events:{<tenantTag>}:relayed:<userTag>   STRING  the same, one key per user (older servers)
package eventstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

// pollEvery is how often Wait asks for new entries (a plain XRANGE: no connection is held
// blocked per reader).
const pollEvery = 200 * time.Millisecond

// Options configure New.
type Options struct {
	Prefix string
	// Hasher derives tenant tags; required.
	Hasher *keyhash.Hasher
	// Retention bounds the tenant streams (the relay appends with it).
	Retention events.Retention
	// Audit logs each session event as the relay copies it (nil: none).
	Audit *events.Audit
	// SessionHash, when set, is the per-user layout's session hash of a user tag
	// (sessionstore.UserSessionsKey), where the session scripts keep the user's pending events;
	// nil: they are in the user's outbox stream (the per-session layout).
	SessionHash func(userTag string) string
	// Metrics counts the relay scripts' errors (nil: not counted).
	Metrics *repo.Metrics
	Logger  *slog.Logger
}

// Store reads the tenant streams and relays outboxes.
type Store struct {
	client    rueidis.Client
	durable   *store.Durable // confirms a relay's copy before its outbox entries go (relay_confirm.go)
	reads     repo.Writes    // confirms the events a range shows (GATEWAY_DURABLE_READS)
	metrics   *repo.Metrics
	keys      repo.Keys
	hasher    *keyhash.Hasher
	retention events.Retention
	audit     *events.Audit
	log       *slog.Logger
	// outbox is where the users' pending session events are (Options.SessionHash).
	outbox outbox
	// checkpointHash: the relay's checkpoints are fields of one hash per tenant, each with its
	// own TTL (servers with millisecond field expiration), else one key per user; written with
	// their TTL in one HSETEX where the server has it (checkpointHSetex).
	checkpointHash, checkpointHSetex bool
}

var _ events.Store = (*Store)(nil)

// New returns the store over s.
func New(s *store.Store, o Options) (*Store, error) {
	if err := repo.CheckBase("events", s, o.Prefix, o.Hasher); err != nil {
		return nil, err
	}
	if o.Retention.MaxAge <= 0 || o.Retention.MaxLen <= 0 {
		return nil, fmt.Errorf("%w: events retention must be positive", repo.ErrBadOptions)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	es := &Store{client: s.Client, durable: s.Durable, reads: repo.NewWrites(s, o.Metrics), metrics: o.Metrics, keys: repo.Keys{Prefix: o.Prefix}, hasher: o.Hasher, retention: o.Retention, audit: o.Audit, log: o.Logger}
	es.checkpointHash = s.Caps.FieldExpiry != store.FieldExpiryFallback && s.Caps.FieldExpiryMs
	es.checkpointHSetex = es.checkpointHash && s.Caps.FieldExpiry == store.FieldExpiryHSETEX
	es.outbox = outboxStream{es}
	if o.SessionHash != nil {
		es.outbox = outboxHash{s: es, key: o.SessionHash}
	}
	return es, nil
}

func (s *Store) stream(tenant string) string { return s.keys.EventStream(s.hasher.TenantTag(tenant)) }

// Range returns up to count events strictly after id, oldest first, and whether more follow.
func (s *Store) Range(ctx context.Context, tenant, after string, count int) ([]events.Event, bool, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	key := s.stream(tenant)
	read := func(c rueidis.Client) (entries []rueidis.XRangeEntry, err error) {
		entries, err = c.Do(ctx, c.B().Xrange().Key(key).Start(start).End("+").Count(int64(count)+1).Build()).AsXRange()
		if err != nil && !rueidis.IsRedisNil(err) {
			return nil, repo.CommandError("events range", err)
		}
		return entries, nil
	}
	entries, err := read(s.client)
	if err == nil && len(entries) > 0 && s.reads.ConfirmsReads() {
		// Events found are shown once a replica holds them, as reads of drafts and cases are
		// (repo.Writes.Read): an event written with a write whose confirmation failed (a 503 a
		// failover may undo) is not shown before. An empty page shows nothing to undo, so an
		// idle poll (Wait) costs no confirmation.
		err = s.reads.Read(ctx, key, func(c rueidis.Client) (err error) {
			entries, err = read(c)
			return err
		})
	}
	if err != nil {
		return nil, false, err
	}
	more := len(entries) > count
	if more {
		entries = entries[:count]
	}
	out, err := s.decode(ctx, tenant, entries)
	return out, more, err
}

// Wait polls for up to block for events after id.
func (s *Store) Wait(ctx context.Context, tenant, after string, count int, block time.Duration) ([]events.Event, error) {
	deadline := time.Now().Add(block)
	for {
		out, _, err := s.Range(ctx, tenant, after, count)
		if err != nil || len(out) > 0 {
			return out, err
		}
		wait := min(pollEvery, time.Until(deadline))
		if wait <= 0 {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(wait):
		}
	}
}

// Last is the newest entry's id, "0-0" for an empty stream.
func (s *Store) Last(ctx context.Context, tenant string) (string, error) {
	entries, err := s.client.Do(ctx, s.client.B().Xrevrange().Key(s.stream(tenant)).End("+").Start("-").Count(1).Build()).AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		return "", repo.CommandError("events last", err)
	}
	if len(entries) == 0 {
		return "0-0", nil
	}
	return entries[0].ID, nil
}

// decode turns entries into events; an unreadable entry is logged (its id, never values) and
// skipped, as is one of another tenant (never expected: the stream is the tenant's).
func (s *Store) decode(ctx context.Context, tenant string, entries []rueidis.XRangeEntry) ([]events.Event, error) {
	out := make([]events.Event, 0, len(entries))
	for _, e := range entries {
		ev, err := events.FromEntry(e.ID, e.FieldValues)
		if err != nil || ev.Tenant != tenant {
			s.log.WarnContext(ctx, "corrupt event entry", "key_pattern", s.keys.Prefix+":v1:events:{<tenantTag>}", "id", e.ID)
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}
