package repo

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
)

// Every write of the object stores (quote drafts, cases and the sweeper's escalation,
// Idempotency-Key records) is confirmed as a credential-ending write is (durable.go), so
// that a failover cannot undo what the gateway acknowledged: Writes.Script runs the script
// inside store.Durable.Run, on one connection, after store.Ready has checked that the replicas
// it must be confirmed by are connected (otherwise 503, nothing written), and WAIT (and
// WAITAOF when the primary has append-only on), sent in the script's round trip, confirms it. A reply that wrote nothing — a
// refusal, an idempotent retry finding what an earlier attempt made — is confirmed through the
// durable marker: it may stand on that earlier attempt's write, whose confirmation timed out.
// GATEWAY_DURABLE_WRITES=credentials (store.Durability.CredentialsOnly) runs them unconfirmed.

// Writes runs the scripts that change a store's objects, each confirmed before its reply is
// returned. The zero value is not usable: NewWrites.
type Writes struct {
	client  rueidis.Client
	durable *store.Durable // nil: unconfirmed (durability off, credentials only, embedded store)
	reads   *store.Durable // nil: reads unconfirmed (the same, or GATEWAY_DURABLE_READS=off)
	metrics *Metrics
}

// NewWrites returns the writes (and the confirmed reads) of a store on s, counted in m.
func NewWrites(s *store.Store, m *Metrics) Writes {
	return Writes{client: s.Client, durable: s.Durable.Objects(), reads: s.Durable.Reads(), metrics: m}
}

// Read runs read (the commands of one read of a store's objects, on keys in key's slot) and
// returns once what it read is confirmed: on one connection, the read (its first command
// carries ROLE: no replica connected → 503), then a propagated write (confirmRead) sent with
// WAIT, which covers every write the primary had made, the one read included: two round trips.
// A write answered 503 (applied on the primary, its confirmation failed) can thus never be
// shown by a read and then undone by a failover: the read answers 503 too while the replicas
// cannot confirm (ROBUSTNESS.md, findings 5, 11 and 14). Unconfirmed (no replica known,
// durability off, GATEWAY_DURABLE_READS=off) read runs on the pipelined client as any call does.
func (w Writes) Read(ctx context.Context, key string, read func(c rueidis.Client) error) error {
	if !w.reads.Waits() {
		return read(w.client)
	}
	return w.reads.Run(ctx, w.client, func(c rueidis.Client) (bool, error) {
		if err := read(c); err != nil {
			return false, err
		}
		return confirmRead(ctx, c, key)
	})
}

// ConfirmsReads reports whether Read confirms what it reads (a replica known, reads confirmed).
func (w Writes) ConfirmsReads() bool { return w.reads.Waits() }

// Confirm returns once everything the primary holds in key's slot — what an earlier read
// there returned included — is confirmed as Read confirms (a barrier: a touch of key and
// WAIT); nil at once where reads are not confirmed.
func (w Writes) Confirm(ctx context.Context, key string) error {
	if !w.ConfirmsReads() {
		return nil
	}
	return w.Read(ctx, key, func(rueidis.Client) error { return nil })
}

// touch rewrites key's expiry unchanged: a write Redis propagates (as PEXPIREAT), which moves
// the connection's replication offset as the marker does, on the key the read found.
var touch = LoadScript(ownScripts, "confirm_touch")

// confirmRead moves c's replication offset for a read of key (Read) and confirms it in the
// same round trip (store.ConfirmWith): by touching key when it exists, else through the
// durable marker. During a slot migration the node giving the slot away redirects (ASK) a
// command on a key it does not hold — the marker, a new key, included — and a read run again
// on the importing node would not find a key that has not moved yet; touching the key the read
// found keeps the confirmation where the read ran.
func confirmRead(ctx context.Context, c rueidis.Client, key string) (bool, error) {
	if !store.Confirms(c) {
		return false, nil
	}
	res, err := execConfirmed(ctx, c, touch, []string{key}, nil)
	if err != nil {
		return false, err
	}
	n, err := res.AsInt64()
	if err != nil {
		return false, CommandError("confirmed read", err)
	}
	if n == 1 {
		return true, nil
	}
	return confirmMarker(ctx, c, markerKey(key))
}

// Script runs l on keys (keys[0] names the slot, and with it the node, of the whole write) as
// RunScript does, and returns its reply once the write is confirmed: an error wrapping
// storeerr.ErrUnavailable (503) when the replicas are not connected (nothing was written) or did
// not acknowledge in time (the write may be on the primary only; a retry is safe where the
// script is idempotent, and a compare-and-set refuses a repeated one with 412).
func (w Writes) Script(ctx context.Context, name, op string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	if !w.durable.Waits() {
		// Nothing to confirm (no replica known: a single server, or durability off): the
		// pipelined client, without the dedicated connection and ROLE a confirmation needs.
		return RunScript(ctx, w.client, w.metrics, name, op, l, keys, args)
	}
	var rep Reply
	err := w.durable.Run(ctx, w.client, func(c rueidis.Client) (bool, error) {
		if err := store.Ready(ctx, c, keys[0]); err != nil {
			return false, CommandError(op, err)
		}
		res, confirmErr := execConfirmed(ctx, c, l, keys, args)
		if res == nil {
			return false, confirmErr
		}
		var err error
		rep, err = decodeScript(name, *res)
		if rep, err = scriptOutcome(ctx, w.metrics, name, op, rep, err); err != nil {
			return false, err
		}
		if confirmErr != nil {
			return false, confirmErr
		}
		if rep.Code() == CodeOK {
			return true, nil // confirmed with it (or, after NOSCRIPT, by Run)
		}
		return confirmRead(ctx, c, keys[0]) // what it found, as a read
	})
	if err != nil {
		return Reply{}, err
	}
	return rep, nil
}

// markerKey is the durable marker of the hash tag of key (<prefix>:v1:<type>:{<tag>}...):
// <prefix>:v1:durable:{<tag>}, in key's slot.
func markerKey(key string) string {
	prefix, _, _ := strings.Cut(key, ":v1:")
	_, rest, _ := strings.Cut(key, "{")
	tag, _, _ := strings.Cut(rest, "}")
	return Keys{Prefix: prefix}.Key("durable", tag)
}
