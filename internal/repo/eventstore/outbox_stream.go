package eventstore

import (
	"context"
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

// ack deletes the entries copied; with none (an outbox emptied within its last id's
// millisecond) it deletes the empty outbox.
func (o outboxStream) ack(ctx context.Context, tags []string, bs []batch) ([]time.Duration, []error) {
	calls := make([]rueidis.LuaExec, len(tags))
	for i, tag := range tags {
		ids := make([]string, len(bs[i].entries))
		for j, e := range bs[i].entries {
			ids[j] = e.ID
		}
		calls[i] = rueidis.LuaExec{Keys: []string{o.s.keys.EventOutbox(tag)}, Args: ids}
	}
	_, errs := repo.RunScripts(ctx, o.s.client, o.s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, calls)
	return make([]time.Duration, len(tags)), errs
}

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
