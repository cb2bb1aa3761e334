package eventstore

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
)

// outboxStream is the per-session layout's outbox: a stream per user,
// <prefix>:v1:evoutbox:{<userTag>}, one more key of every session write script
// (session_event_stream.lua in internal/repo/sessionstore). outbox_ack.lua deletes what was
// copied, and the emptied stream.
type outboxStream struct{ s *Store }

var scriptAck = repo.LoadScript(scriptFiles, "outbox_ack")

func (o outboxStream) read(ctx context.Context, tags []string) ([]batch, []error) {
	cmds := make(rueidis.Commands, len(tags))
	for i, tag := range tags {
		cmds[i] = o.s.client.B().Xrange().Key(o.s.keys.EventOutbox(tag)).Start("-").End("+").Count(relayBatch).Build()
	}
	bs, errs := make([]batch, len(tags)), make([]error, len(tags))
	for i, res := range o.s.client.DoMulti(ctx, cmds...) {
		entries, err := res.AsXRange()
		if err != nil && !rueidis.IsRedisNil(err) {
			errs[i] = repo.CommandError("events outbox", err)
			continue
		}
		bs[i] = batch{entries: entries, more: len(entries) == relayBatch}
	}
	return bs, errs
}

// ack deletes the entries copied, and the outbox once empty; an outbox emptied within its last
// id's millisecond is deleted by a second call once that passed (at most maxCleanupWait later;
// else by the next relay or the sweep).
func (o outboxStream) ack(ctx context.Context, tags []string, bs []batch) []error {
	calls := make([]rueidis.LuaExec, len(tags))
	for i, tag := range tags {
		ids := make([]string, len(bs[i].entries))
		for j, e := range bs[i].entries {
			ids[j] = e.ID
		}
		calls[i] = rueidis.LuaExec{Keys: []string{o.s.keys.EventOutbox(tag)}, Args: ids}
	}
	reps, errs := repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, calls)
	var again []rueidis.LuaExec
	var wait int64
	for i, rep := range reps {
		if errs[i] != nil {
			continue
		}
		ms, err := rep.Int(1) // {'OK', left, waitMs}
		if err = cmp.Or(rep.Want(2), err); err != nil || rep.Code() != repo.CodeOK {
			errs[i] = fmt.Errorf("events outbox ack: %w", repo.ErrReply)
			continue
		}
		if ms > 0 && time.Duration(ms)*time.Millisecond <= maxCleanupWait {
			again = append(again, rueidis.LuaExec{Keys: calls[i].Keys})
			wait = max(wait, ms)
		}
	}
	if len(again) > 0 {
		time.Sleep(time.Duration(wait) * time.Millisecond)
		repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, again)
	}
	return errs
}

// maxCleanupWait is the longest ack waits for an emptied outbox stream's deletion (its last
// id's millisecond to pass); longer, the next relay or the sweep deletes it.
const maxCleanupWait = 5 * time.Millisecond

func (o outboxStream) scan() (string, string) { return o.prefix() + "*", "stream" }

func (o outboxStream) prefix() string { return o.s.keys.Prefix + ":v1:evoutbox:{" }

// pending: an outbox stream exists only while it holds events (or within its last id's
// millisecond), so every one found is relayed.
func (o outboxStream) pending(_ context.Context, _ rueidis.Client, keys []string) ([]string, error) {
	tags := make([]string, 0, len(keys))
	for _, k := range keys {
		tags = append(tags, strings.TrimSuffix(strings.TrimPrefix(k, o.prefix()), "}"))
	}
	return tags, nil
}
