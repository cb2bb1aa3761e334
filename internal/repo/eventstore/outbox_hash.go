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
// read takes the pending ones (plain HMGETs), outbox_hash_ack.lua deletes what was copied
// (and a hash left with neither session nor event).
type outboxHash struct {
	s *Store
	// key is the user's session hash of a user tag (Options.SessionHash).
	key func(userTag string) string
}

var scriptHashAck = repo.LoadScript(scriptFiles, "outbox_hash_ack")

// read takes two pipelined rounds of plain commands (cheaper on the server than a script per
// user): the counters of every user (HMGET evHead evSeq), then the pending events of those
// that have some (HMGET ev.<head>..). Nothing holds the hash between the two: an event a
// concurrent relay deleted meanwhile reads as absent and is skipped (that relay copied it),
// and one appended meanwhile is left for the next read.
func (o outboxHash) read(ctx context.Context, tags []string) ([]batch, []error) {
	bs, errs := make([]batch, len(tags)), make([]error, len(tags))
	counters := make(rueidis.Commands, len(tags))
	for i, tag := range tags {
		counters[i] = o.s.client.B().Hmget().Key(o.key(tag)).Field(evHead, evSeq).Build()
	}
	var cmds rueidis.Commands
	var at []int // cmds[j] reads the events of tags[at[j]]
	for i, res := range o.s.client.DoMulti(ctx, counters...) {
		head, last, err := pendingRange(res)
		if err != nil {
			errs[i] = err
			continue
		}
		if head == 0 {
			continue
		}
		bs[i] = batch{first: strconv.FormatInt(head, 10), last: strconv.FormatInt(last, 10)}
		names := make([]string, 0, last-head+1)
		for n := head; n <= last; n++ {
			names = append(names, eventField(n))
		}
		cmds = append(cmds, o.s.client.B().Hmget().Key(o.key(tags[i])).Field(names...).Build())
		at = append(at, i)
	}
	if len(cmds) == 0 {
		return bs, errs
	}
	for j, res := range o.s.client.DoMulti(ctx, cmds...) {
		i := at[j]
		vals, err := res.ToArray()
		if err != nil {
			bs[i], errs[i] = batch{}, repo.CommandError("events outbox read", err)
			continue
		}
		bs[i].fill(ctx, o, vals)
	}
	return bs, errs
}

// The outbox's fields in the user's hash (the kit's snippet event_outbox).
const evHead, evSeq = "evHead", "evSeq"

func eventField(n int64) string { return "ev." + strconv.FormatInt(n, 10) }

// pendingRange reads HMGET evHead evSeq: the numbers of the first and last pending event a read
// takes (at most relayBatch), or 0, 0 when none is pending.
func pendingRange(res rueidis.RedisResult) (head, last int64, err error) {
	v, err := res.ToArray()
	if err != nil {
		return 0, 0, repo.CommandError("events outbox read", err)
	}
	if len(v) != 2 {
		return 0, 0, fmt.Errorf("events outbox read: %w", repo.ErrReply)
	}
	head, err1 := v[0].AsInt64()
	seq, err2 := v[1].AsInt64()
	if err1 != nil || err2 != nil || head <= 0 || head > seq {
		return 0, 0, nil // none pending (absent counters: none ever, or all relayed)
	}
	return head, min(seq, head+relayBatch-1), nil
}

// fill adds the events read (the values of ev.<first>..ev.<last>) to b, skipping the absent
// (expired, or deleted by a concurrent relay that copied them) and the unreadable (logged).
func (b *batch) fill(ctx context.Context, o outboxHash, vals []rueidis.RedisMessage) {
	first, _ := strconv.ParseInt(b.first, 10, 64)
	b.more = len(vals) == relayBatch
	for k, m := range vals {
		v, err := m.ToString()
		if err != nil {
			continue // absent
		}
		n := first + int64(k)
		f, ok := events.OutboxFields(v)
		if !ok {
			o.s.log.WarnContext(ctx, "corrupt session event", "key_pattern", o.key("<userTag>"), "n", n)
			continue
		}
		b.entries = append(b.entries, rueidis.XRangeEntry{ID: events.OutboxID(n), FieldValues: f})
	}
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
		cmds[i] = node.B().Hmget().Key(k).Field(evHead, evSeq).Build()
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
