package repo

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
)

// Objects is the path the stores of hash objects with a tenant, a version and a quota (quote
// drafts, escalation cases) share: an object is one hash under its tenant's tag, read with
// HGETALL, created and changed only by scripts that answer {'OK', HGETALL hash} or a refusal.
// T is the service's model; the store says how the fields map to it.
type Objects[T any] struct {
	Type       string // the metric label and the noun of errors: "quote"
	KeyPattern string // what a log names instead of a key: "quote:{q_*}"
	// Map reads a hash of schema outcome (Found, OldSchema; Corrupt reads as Found) into T,
	// flagging (Fields.Flag) every field that is missing, malformed or breaks an invariant.
	Map func(f *Fields, outcome Outcome) *T
	// Tenant is the tenant an object belongs to.
	Tenant  func(*T) string
	Quota   Quota
	Metrics *Metrics
	Log     *slog.Logger
}

// Flag records name as missing or malformed (an invariant the field breaks included).
func (f *Fields) Flag(name string) { f.bad = append(f.bad, name) }

// Flagged names the fields found missing or malformed so far (for a log: names, never values).
func (f *Fields) Flagged() []string { return f.bad }

// Decode classifies and maps a hash: none is NotFound, one with flagged fields is refused with
// ErrCorrupt (counted, logged by key pattern and field names, never values).
func (o *Objects[T]) Decode(ctx context.Context, hash map[string]string, id string) (*T, error) {
	if len(hash) == 0 {
		o.Metrics.Read(ctx, o.Type, Missing)
		return nil, fmt.Errorf("%s %s: %w", o.Type, id, apperr.NotFound)
	}
	o.Metrics.Payload(ctx, o.Type, PayloadBytes(hash))
	f := NewFields(hash)
	outcome := f.Schema()
	v := o.Map(f, outcome)
	if err := f.Err(o.Type); err != nil {
		o.Metrics.Read(ctx, o.Type, Corrupt)
		o.Log.ErrorContext(ctx, "corrupt object", "key", o.KeyPattern, "fields", f.Flagged())
		return nil, err
	}
	o.Metrics.Read(ctx, o.Type, outcome)
	return v, nil
}

// DecodeReply decodes the hash script answered as the first value of its reply's payload.
func (o *Objects[T]) DecodeReply(ctx context.Context, script string, rep Reply, id string) (*T, error) {
	m, err := rep.StrMap(0)
	if err != nil {
		return nil, BadReply(ctx, o.Metrics, script, err)
	}
	return o.Decode(ctx, m, id)
}

// Get reads the object at key: NotFound when there is none.
func (o *Objects[T]) Get(ctx context.Context, c rueidis.Client, key, id string) (*T, error) {
	m, err := o.fetch(ctx, c, key)
	if err != nil {
		return nil, err
	}
	return o.Decode(ctx, m, id)
}

// Read is Get confirmed (Writes.Read): what it answers, found or not, a failover keeps.
func (o *Objects[T]) Read(ctx context.Context, w Writes, key, id string) (*T, error) {
	var m map[string]string
	err := w.Read(ctx, key, func(c rueidis.Client) (err error) {
		m, err = o.fetch(ctx, c, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	return o.Decode(ctx, m, id)
}

// fetch is the object's hash at key (empty when there is none).
func (o *Objects[T]) fetch(ctx context.Context, c rueidis.Client, key string) (map[string]string, error) {
	m, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return nil, CommandError(o.Type+" get", err)
	}
	return m, nil
}

// Created reads a create script's reply, checked against its shapes by the caller:
// {'OK', HGETALL hash} is the new object, {'EXISTS', HGETALL hash} the one an idempotent retry
// planned (refused with 409 when another tenant's: only a forged planned id could collide),
// {'QUOTA', ms} the tenant's quota refusal. The caller answers any other code first.
func (o *Objects[T]) Created(ctx context.Context, script string, rep Reply, tenant, id string) (*T, error) {
	if rep.Code() == CodeQuota {
		o.Metrics.Transition(ctx, o.Type, "create", "quota")
		return nil, QuotaRefusal(ctx, o.Metrics, script, rep, o.Quota)
	}
	v, err := o.DecodeReply(ctx, script, rep, id)
	if err != nil {
		return nil, err
	}
	if o.Tenant(v) != tenant {
		return nil, apperr.Newf(apperr.Conflict, "The %s id is taken; retry without the Idempotency-Key.", o.Type)
	}
	o.Metrics.Transition(ctx, o.Type, "create", CreateOutcome(rep.Code()))
	return v, nil
}

// IfMatchArg is an expected version as the scripts take it: empty (any version) for a negative
// one, the caller having sent no If-Match.
func IfMatchArg(v int64) string {
	if v < 0 {
		return ""
	}
	return FormatMs(v)
}

// Change is one run of a script that changes an object.
type Change struct {
	Script     string // the script's name
	Name       string // the transition, as metrics and errors name it: "patch"
	Lua        *rueidis.Lua
	Keys, Args []string
	Replies    ReplyShapes // what the script answers
	ID         string      // the object's id
}

// Transition runs ch through w (confirmed, writes.go) and reads its reply: {'OK', HGETALL hash}
// is the changed object; NOT_FOUND, STALE (412 with the current ETag) and CORRUPT answer as
// every object does; any other code ch.Replies declares goes to refuse with its one string, for
// the store to word.
func (o *Objects[T]) Transition(ctx context.Context, w Writes, ch Change, refuse func(code Code, arg string) error) (*T, error) {
	rep, err := w.Script(ctx, ch.Script, o.Type+" "+ch.Name, ch.Lua, ch.Keys, ch.Args)
	if err != nil {
		return nil, err
	}
	o.Metrics.Transition(ctx, o.Type, ch.Name, OutcomeOf(rep.Code()))
	arg, err := ch.Replies.Read(rep)
	if err != nil {
		return nil, BadReply(ctx, o.Metrics, ch.Script, err)
	}
	switch rep.Code() {
	case CodeOK:
		return o.DecodeReply(ctx, ch.Script, rep, ch.ID)
	case CodeNotFound:
		return nil, fmt.Errorf("%s %s: %w", o.Type, ch.Name, rep.Err(""))
	case CodeStale:
		o.Metrics.Event(ctx, o.Type, "cas_conflict")
		return nil, StaleError(arg)
	case CodeCorrupt:
		return nil, CorruptError(ctx, o.Metrics, o.Log, ch.Script, o.Type, o.KeyPattern, arg)
	}
	return nil, refuse(rep.Code(), arg)
}
