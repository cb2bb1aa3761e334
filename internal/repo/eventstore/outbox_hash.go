package eventstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
)

// outboxHash is the per-user layout's outbox: fields of the user's session hash (the kit's
// snippet event_outbox: evSeq, evHead, ev.<n>), written by the session scripts on that one key.
// outbox_hash_read.lua reads the pending ones, outbox_hash_ack.lua deletes what was copied
// (and a hash left with neither session nor event).
type outboxHash struct {
	s *Store
	// key is the user's session hash of a user tag (Options.SessionHash).
	key func(userTag string) string
}

var (
	scriptHashRead = repo.LoadScript(scriptFiles, "outbox_hash_read")
	scriptHashAck  = repo.LoadScript(scriptFiles, "outbox_hash_ack")
)

func (o outboxHash) read(ctx context.Context, tags []string) ([]batch, []error) {
	calls := make([]rueidis.LuaExec, len(tags))
	for i, tag := range tags {
		calls[i] = rueidis.LuaExec{Keys: []string{o.key(tag)}, Args: []string{strconv.Itoa(relayBatch)}}
	}
	reps, errs := repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_hash_read", "events outbox read", scriptHashRead, calls)
	bs := make([]batch, len(tags))
	for i, rep := range reps {
		if errs[i] == nil {
			bs[i], errs[i] = o.decode(ctx, rep)
		}
	}
	return bs, errs
}

// decode reads outbox_hash_read.lua's reply: {'OK'} | {'OK', first, last, <value>...}.
func (o outboxHash) decode(ctx context.Context, rep repo.Reply) (batch, error) {
	if rep.Code() != repo.CodeOK {
		return batch{}, fmt.Errorf("events outbox read: %w", repo.ErrReply)
	}
	if rep.Len() == 0 {
		return batch{}, nil
	}
	vals, err := rep.Strs(0)
	if err != nil || len(vals) < 2 {
		return batch{}, fmt.Errorf("events outbox read: %w", repo.ErrReply)
	}
	first, err1 := strconv.ParseInt(vals[0], 10, 64)
	last, err2 := strconv.ParseInt(vals[1], 10, 64)
	if err1 != nil || err2 != nil || int64(len(vals)-2) != last-first+1 {
		return batch{}, fmt.Errorf("events outbox read: %w", repo.ErrReply)
	}
	b := batch{first: vals[0], last: vals[1], more: len(vals)-2 == relayBatch}
	for i, v := range vals[2:] {
		n := first + int64(i)
		f, ok := events.OutboxFields(v)
		if !ok { // expired ('') or unreadable: nothing to copy; the ack deletes it
			if v != "" {
				o.s.log.WarnContext(ctx, "corrupt session event", "key_pattern", o.key("<userTag>"), "n", n)
			}
			continue
		}
		b.entries = append(b.entries, rueidis.XRangeEntry{ID: events.OutboxID(n), FieldValues: f})
	}
	return b, nil
}

// ack: an empty batch (nothing read) runs only the clean-up, once asked to (retry).
func (o outboxHash) ack(ctx context.Context, tags []string, bs []batch) ([]time.Duration, []error) {
	waits, errs := make([]time.Duration, len(tags)), make([]error, len(tags))
	var calls []rueidis.LuaExec
	var at []int // calls[j] acks tags[at[j]]
	for i, b := range bs {
		if b.first == "" && !b.retry {
			continue
		}
		first, last := cmp.Or(b.first, "0"), cmp.Or(b.last, "0")
		calls = append(calls, rueidis.LuaExec{Keys: []string{o.key(tags[i])}, Args: []string{first, last}})
		at = append(at, i)
	}
	reps, rerrs := repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_hash_ack", "events outbox ack", scriptHashAck, calls)
	for j, rep := range reps {
		i := at[j]
		if errs[i] = rerrs[j]; errs[i] != nil {
			continue
		}
		wait, err := rep.Int(1) // {'OK', pending, waitMs}
		if err = cmp.Or(rep.Want(2), err); err != nil || rep.Code() != repo.CodeOK {
			errs[i] = fmt.Errorf("events outbox ack: %w", repo.ErrReply)
			continue
		}
		waits[i] = time.Duration(wait) * time.Millisecond
	}
	return waits, errs
}

func (o outboxHash) scan() (string, string) { return o.key("*"), "hash" }

// pending reads evHead and evSeq of every user hash found (one pipeline on node) and answers
// the tags of those with events pending.
func (o outboxHash) pending(ctx context.Context, node rueidis.Client, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	prefix, suffix, _ := strings.Cut(o.key("\x00"), "\x00")
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = node.B().Hmget().Key(k).Field("evHead", "evSeq").Build()
	}
	var tags []string
	for i, res := range node.DoMulti(ctx, cmds...) {
		v, err := res.ToArray()
		if err != nil {
			if _, reply := rueidis.IsRedisErr(err); reply { // gone, or moved meanwhile (MOVED, ASK): a later pass
				continue
			}
			return tags, repo.CommandError("events sweep", err)
		}
		if len(v) != 2 {
			continue
		}
		head, err1 := v[0].AsInt64()
		seq, err2 := v[1].AsInt64()
		if err1 == nil && err2 == nil && head <= seq {
			tags = append(tags, strings.TrimSuffix(strings.TrimPrefix(keys[i], prefix), suffix))
		}
	}
	return tags, nil
}
