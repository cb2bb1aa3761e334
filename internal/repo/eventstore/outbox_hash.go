package eventstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
)

// outboxHash is the per-user layout's outbox: fields of the user's session hash (the kit's
// snippet event_outbox: evSeq, ev.<n>), written by the session scripts on that one key. read
// and ack are plain commands, pipelined over many users (cheaper on the server than a script
// per user): the pending events are always the newest numbers up to evSeq (whatever deletes
// events deletes the oldest first), so a read needs no other counter, and the ack is an HDEL
// of what was copied — idempotent, creating nothing.
type outboxHash struct {
	s *Store
	// key is the user's session hash of a user tag (Options.SessionHash).
	key func(userTag string) string
}

// readWindow is how many of the newest numbers a read asks for first; when all are pending it
// reads further back, relayBatch at a time, until it finds the oldest.
const readWindow = 4

// The outbox's fields in the user's hash (the kit's snippet event_outbox).
const evSeq = "evSeq"

func eventField(n int64) string { return "ev." + strconv.FormatInt(n, 10) }

// read takes pipelined rounds of plain commands: evSeq of every user (HGET), then the newest
// readWindow events of those that have a number (HMGET), then, for a user whose every one was
// pending, older ones until the oldest is found. Nothing holds the hash between the rounds:
// an event a concurrent relay deleted meanwhile reads as absent and is skipped (that relay
// copied it; it was older than every one still there), and one appended meanwhile is left for
// the next read.
func (o outboxHash) read(ctx context.Context, tags []string) ([]batch, []error) {
	errs := make([]error, len(tags))
	var cmds rueidis.Commands
	// per user: the lowest number read so far (0: nothing to read) and the values from it on
	lo := make([]int64, len(tags))
	vals := make([][]rueidis.RedisMessage, len(tags))
	floor := make([]int64, len(tags)) // the oldest number that can be pending
	var at []int
	for i, res := range o.s.client.DoMulti(ctx, o.seqs(tags)...) {
		seq, err := res.AsInt64()
		switch {
		case rueidis.IsRedisNil(err):
			continue // no event ever (or the hash is gone)
		case err != nil:
			errs[i] = repo.CommandError("events outbox read", err)
			continue
		}
		floor[i] = max(1, seq-int64(repo.EventOutboxMax)+1)
		lo[i] = max(floor[i], seq-readWindow+1)
		cmds = append(cmds, o.events(tags[i], lo[i], seq))
		at = append(at, i)
	}
	for len(cmds) > 0 {
		var next rueidis.Commands
		var nextAt []int
		for j, res := range o.s.client.DoMulti(ctx, cmds...) {
			i := at[j]
			v, err := res.ToArray()
			if err != nil {
				lo[i], errs[i] = 0, repo.CommandError("events outbox read", err)
				continue
			}
			vals[i] = append(v, vals[i]...)
			if v[0].IsNil() || lo[i] == floor[i] {
				continue // the oldest pending is among them
			}
			hi := lo[i] - 1
			lo[i] = max(floor[i], hi-relayBatch+1)
			next = append(next, o.events(tags[i], lo[i], hi))
			nextAt = append(nextAt, i)
		}
		cmds, at = next, nextAt
	}
	bs := make([]batch, len(tags))
	for i := range tags {
		if errs[i] == nil && lo[i] > 0 {
			bs[i] = o.batch(ctx, lo[i], vals[i])
		}
	}
	return bs, errs
}

func (o outboxHash) seqs(tags []string) rueidis.Commands {
	cmds := make(rueidis.Commands, len(tags))
	for i, tag := range tags {
		cmds[i] = o.s.client.B().Hget().Key(o.key(tag)).Field(evSeq).Build()
	}
	return cmds
}

// events is the HMGET of the user's events from..to.
func (o outboxHash) events(tag string, from, to int64) rueidis.Completed {
	names := make([]string, 0, to-from+1)
	for n := from; n <= to; n++ {
		names = append(names, eventField(n))
	}
	return o.s.client.B().Hmget().Key(o.key(tag)).Field(names...).Build()
}

// batch is the oldest relayBatch pending events of vals (the values of the numbers from lo
// on), skipping the absent (relayed, expired, dropped) and the unreadable (logged).
func (o outboxHash) batch(ctx context.Context, lo int64, vals []rueidis.RedisMessage) batch {
	var b batch
	for k, m := range vals {
		v, err := m.ToString()
		if err != nil {
			continue // absent
		}
		n := lo + int64(k)
		if b.first == 0 {
			b.first = n
		}
		if n-b.first >= relayBatch {
			b.more = true
			break
		}
		b.last = n
		f, ok := events.OutboxFields(v)
		if !ok {
			o.s.log.WarnContext(ctx, "corrupt session event", "key_pattern", o.key("<userTag>"), "n", n)
			continue
		}
		b.entries = append(b.entries, rueidis.XRangeEntry{ID: events.OutboxID(n), FieldValues: f})
	}
	return b
}

var scriptHashAck = repo.LoadScript(scriptFiles, "outbox_hash_ack")

// ack deletes the events copied (HDEL of their numbers; an unreadable one read among them
// too), one pipeline for every user; a user whose last event ended a session gets
// outbox_hash_ack.lua instead, which also deletes the hash once it holds no session.
func (o outboxHash) ack(ctx context.Context, tags []string, bs []batch) []error {
	errs := make([]error, len(tags))
	var cmds rueidis.Commands
	var calls []rueidis.LuaExec
	var at, callAt []int
	for i, b := range bs {
		if b.first == 0 {
			continue
		}
		if b.ended() {
			calls = append(calls, rueidis.LuaExec{Keys: []string{o.key(tags[i])},
				Args: []string{strconv.FormatInt(b.first, 10), strconv.FormatInt(b.last, 10)}})
			callAt = append(callAt, i)
			continue
		}
		names := make([]string, 0, b.last-b.first+1)
		for n := b.first; n <= b.last; n++ {
			names = append(names, eventField(n))
		}
		cmds = append(cmds, o.s.client.B().Hdel().Key(o.key(tags[i])).Field(names...).Build())
		at = append(at, i)
	}
	if len(cmds) > 0 {
		for j, res := range o.s.client.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				errs[at[j]] = repo.CommandError("events outbox ack", err)
			}
		}
	}
	_, cerrs := repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_hash_ack", "events outbox ack", scriptHashAck, calls)
	for j, err := range cerrs {
		errs[callAt[j]] = err
	}
	return errs
}

// ended reports whether the batch is the user's last pending events and its last one ended a
// session (the hash may hold none now).
func (b batch) ended() bool {
	if b.more || len(b.entries) == 0 {
		return false
	}
	t := events.Type(b.entries[len(b.entries)-1].FieldValues[events.FieldType])
	return t == events.SessionRevoked || t == events.SessionLoggedOut
}

func (o outboxHash) scan() (string, string) { return o.key("*"), "hash" }

// pending reads evSeq of every user hash found, then whether its event evSeq is still there
// (two pipelines on node), and answers the tags of those with events pending: the newest is
// pending whenever any is (the oldest go first).
func (o outboxHash) pending(ctx context.Context, node rueidis.Client, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	prefix, suffix, _ := strings.Cut(o.key("\x00"), "\x00")
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = node.B().Hget().Key(k).Field(evSeq).Build()
	}
	var last rueidis.Commands
	var at []string
	for i, res := range node.DoMulti(ctx, cmds...) {
		seq, err := res.AsInt64()
		if err != nil {
			if _, reply := rueidis.IsRedisErr(err); reply || rueidis.IsRedisNil(err) { // none, gone, or moved meanwhile (MOVED, ASK): a later pass
				continue
			}
			return nil, repo.CommandError("events sweep", err)
		}
		last = append(last, node.B().Hexists().Key(keys[i]).Field(eventField(seq)).Build())
		at = append(at, keys[i])
	}
	if len(last) == 0 {
		return nil, nil
	}
	var tags []string
	for j, res := range node.DoMulti(ctx, last...) {
		if ok, err := res.AsBool(); err == nil && ok {
			tags = append(tags, strings.TrimSuffix(strings.TrimPrefix(at[j], prefix), suffix))
		} else if _, reply := rueidis.IsRedisErr(err); err != nil && !reply {
			return tags, repo.CommandError("events sweep", err)
		}
	}
	return tags, nil
}
