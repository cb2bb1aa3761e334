package eventstore

import (
	"context"

	"github.com/redis/rueidis"
)

// outbox is where the session scripts of the configured layout keep a user's events until the
// relay copies them: the per-user layout's session hash (outboxHash), the per-session layout's
// outbox stream (outboxStream). The relay (relay.go) and the sweep (sweep.go) are the same over
// either. Reads and acks take many users at once, in one pipeline (one round trip per node).
type outbox interface {
	// read returns, per user tag, up to relayBatch of its pending events, oldest first (entry
	// ids ordered, on the scale of stream ids), and whether more follow; errs[i] is tags[i]'s
	// failure.
	read(ctx context.Context, tags []string) (bs []batch, errs []error)
	// ack deletes, per user tag, the events of bs[i], copied into the tenant's stream (and the
	// outbox stream once empty).
	ack(ctx context.Context, tags []string, bs []batch) (errs []error)
	// scan is the SCAN MATCH pattern and TYPE of the keys that may hold pending events.
	scan() (match, typ string)
	// pending returns the user tags of those keys, found by the sweep on node, that hold pending
	// events.
	pending(ctx context.Context, node rueidis.Client, keys []string) ([]string, error)
}

// batch is what one read found: the events as stream entries (what relay.lua appends and the
// audit decodes), whether more follow, and what ack needs to delete them.
type batch struct {
	entries []rueidis.XRangeEntry
	more    bool
	// first, last: the outbox's numbers of the events read (outboxHash; first 0: none)
	first, last int64
}
