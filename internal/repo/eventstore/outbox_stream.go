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

func (o outboxStream) read(ctx context.Context, userTag string) (batch, error) {
	entries, err := o.s.client.Do(ctx, o.s.client.B().Xrange().Key(o.s.keys.EventOutbox(userTag)).Start("-").End("+").Count(relayBatch).Build()).AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		return batch{}, repo.CommandError("events outbox", err)
	}
	return batch{entries: entries, more: len(entries) == relayBatch}, nil
}

// ack deletes the entries copied; with none (an outbox emptied within its last id's
// millisecond) it deletes the empty outbox.
func (o outboxStream) ack(ctx context.Context, userTag string, b batch) (time.Duration, error) {
	ids := make([]string, len(b.entries))
	for i, e := range b.entries {
		ids[i] = e.ID
	}
	_, err := repo.RunScript(ctx, o.s.client, o.s.metrics, "events_outbox_ack", "events outbox ack", scriptAck, []string{o.s.keys.EventOutbox(userTag)}, ids)
	return 0, err
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
