package webhookstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// What the deliverers use (webhooks.Queue): the registry, the leases, the consumer groups.

// TenantTags are the registered tenants' tags whose webhooks have not all expired.
func (r *Store) TenantTags(ctx context.Context) ([]string, error) {
	now := repo.FormatMs(time.Now().UnixMilli())
	tags, err := r.Client.Do(ctx, r.Client.B().Zrange().Key(r.registryKey()).Min(now).Max("+inf").Byscore().
		Limit(0, MaxTenants).Build()).AsStrSlice()
	if err != nil {
		return nil, repo.CommandError("webhook tenants", err)
	}
	return tags, nil
}

// Lease takes or renews w's lease for holder.
func (r *Store) Lease(ctx context.Context, w *webhooks.Webhook, holder string, ttl time.Duration) (bool, error) {
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "webhook_lease", "webhook lease", scriptLease,
		[]string{r.leaseKey(r.Hasher.TenantTag(w.Tenant), w.ID)}, []string{holder, repo.FormatMs(ttl.Milliseconds())})
	if err != nil {
		return false, err
	}
	if err := leaseReplies.Check(rep); err != nil {
		return false, repo.BadReply(ctx, r.Metrics, "webhook_lease", err)
	}
	return rep.Code() == repo.CodeClaimed, nil
}

// Release gives w's lease up when holder has it.
func (r *Store) Release(ctx context.Context, w *webhooks.Webhook, holder string) error {
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "webhook_release", "webhook release", scriptRelease,
		[]string{r.leaseKey(r.Hasher.TenantTag(w.Tenant), w.ID)}, []string{holder})
	if err != nil {
		return err
	}
	if err := okReplies.Check(rep); err != nil {
		return repo.BadReply(ctx, r.Metrics, "webhook_release", err)
	}
	return nil
}

// Pending claims the group's pending entries from cursor on for consumer (XAUTOCLAIM with no
// minimum idle time: the caller holds the lease, so no other deliverer is working on them).
func (r *Store) Pending(ctx context.Context, w *webhooks.Webhook, consumer, cursor string, count int) ([]webhooks.Entry, string, []string, error) {
	stream := r.streamKey(r.Hasher.TenantTag(w.Tenant))
	arr, err := r.withGroup(ctx, w, func() ([]rueidis.RedisMessage, error) {
		cmd := r.Client.B().Xautoclaim().Key(stream).Group(w.ID).Consumer(consumer).MinIdleTime("0").Start(cursor).Count(int64(count)).Build()
		return r.Client.Do(ctx, cmd).ToArray()
	})
	if err != nil || arr == nil {
		return nil, "0-0", nil, err
	}
	if len(arr) < 2 {
		return nil, "", nil, repo.CommandError("webhook pending", errShape)
	}
	next, err := arr[0].ToString()
	if err != nil {
		return nil, "", nil, repo.CommandError("webhook pending", err)
	}
	xs, err := arr[1].AsXRange()
	if err != nil {
		return nil, "", nil, repo.CommandError("webhook pending", err)
	}
	var gone []string
	if len(arr) > 2 {
		gone, _ = arr[2].AsStrSlice()
	}
	for _, x := range xs {
		if x.FieldValues == nil { // Redis 6.2 answers a deleted entry as nil in place
			gone = append(gone, x.ID)
		}
	}
	if err := r.confirmRead(ctx, stream, xs); err != nil {
		return nil, "", nil, err
	}
	return r.entries(ctx, w, xs), next, gone, nil
}

// confirmRead returns once the entries read from stream are on a replica (repo.Writes.Confirm,
// GATEWAY_DURABLE_READS): an event written with a write whose confirmation failed (a 503 a
// failover may undo) is not delivered before. On failure the entries stay pending for the
// consumer, and Pending delivers them once they are confirmed.
func (r *Store) confirmRead(ctx context.Context, stream string, xs []rueidis.XRangeEntry) error {
	if len(xs) == 0 {
		return nil
	}
	return r.writes.Confirm(ctx, stream)
}

// ReadNew reads up to count entries the group has not read yet.
func (r *Store) ReadNew(ctx context.Context, w *webhooks.Webhook, consumer string, count int) ([]webhooks.Entry, error) {
	stream := r.streamKey(r.Hasher.TenantTag(w.Tenant))
	var xs []rueidis.XRangeEntry
	_, err := r.withGroup(ctx, w, func() ([]rueidis.RedisMessage, error) {
		cmd := r.Client.B().Xreadgroup().Group(w.ID, consumer).Count(int64(count)).Streams().Key(stream).Id(">").Build()
		m, err := r.Client.Do(ctx, cmd).AsXRead()
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		xs = m[stream]
		return nil, err
	})
	if err != nil {
		return nil, err
	}
	if err := r.confirmRead(ctx, stream, xs); err != nil {
		return nil, err
	}
	return r.entries(ctx, w, xs), nil
}

// withGroup runs do (which builds its command each time: a built command is used once), and
// when the group is missing creates it (webhook_group: only if the
// webhook and the stream exist) and runs do again. No stream yet: nothing to read (nil, nil).
func (r *Store) withGroup(ctx context.Context, w *webhooks.Webhook, do func() ([]rueidis.RedisMessage, error)) ([]rueidis.RedisMessage, error) {
	arr, err := do()
	if err == nil || !noGroup(err) {
		if err != nil {
			return nil, repo.CommandError("webhook read", err)
		}
		return arr, nil
	}
	tag := r.Hasher.TenantTag(w.Tenant)
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "webhook_group", "webhook group", scriptGroup,
		[]string{r.hashKey(tag, w.ID), r.streamKey(tag)}, []string{w.ID})
	if err != nil {
		return nil, err
	}
	if err := groupReplies.Check(rep); err != nil {
		return nil, repo.BadReply(ctx, r.Metrics, "webhook_group", err)
	}
	if rep.Code() == repo.CodeNotFound {
		return nil, nil
	}
	arr, err = do()
	if err != nil {
		return nil, repo.CommandError("webhook read", err)
	}
	return arr, nil
}

// noGroup: the stream or the group does not exist.
func noGroup(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "NOGROUP")
}

// entries decodes stream entries (a malformed one is logged and delivered with what it holds:
// its id and body, so it is neither lost nor blocking).
func (r *Store) entries(ctx context.Context, w *webhooks.Webhook, xs []rueidis.XRangeEntry) []webhooks.Entry {
	out := make([]webhooks.Entry, 0, len(xs))
	for _, x := range xs {
		if x.FieldValues == nil {
			continue
		}
		ev, err := events.FromEntry(x.ID, x.FieldValues)
		if err != nil {
			r.Metrics.Read(ctx, "event", repo.Corrupt)
			r.Log.ErrorContext(ctx, "corrupt object", "key", "events:{*}", "fields", []string{events.FieldType, events.FieldTime})
			ev = events.Salvage(x.ID, x.FieldValues)
		}
		out = append(out, webhooks.Entry{StreamID: x.ID, Event: ev})
	}
	return out
}

// States are the records of the entries named.
func (r *Store) States(ctx context.Context, w *webhooks.Webhook, streamIDs []string) (map[string]webhooks.Delivery, error) {
	return r.hmget(ctx, r.recordsKey(r.Hasher.TenantTag(w.Tenant), w.ID), streamIDs)
}

// Settle records d for streamID and acknowledges a final outcome, under holder's lease.
func (r *Store) Settle(ctx context.Context, w *webhooks.Webhook, holder, streamID string, d webhooks.Delivery) error {
	if holder == "" {
		return webhooks.ErrLeaseLost
	}
	return r.settle(ctx, r.Hasher.TenantTag(w.Tenant), w.ID, holder, streamID, d)
}

func (r *Store) settle(ctx context.Context, tag, id, holder, field string, d webhooks.Delivery) error {
	ack, next := "0", "-1"
	switch d.Status {
	case webhooks.StatusDelivered, webhooks.StatusFailed:
		ack = "1"
	default:
		next = repo.FormatMs(max(time.Until(d.NextAttemptAt).Milliseconds(), 0))
	}
	if holder == "" {
		ack = "0"
	}
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "webhook_settle", "webhook settle", scriptSettle,
		r.settleKeys(tag, id), []string{holder, id, field, encodeRecord(d), ack, next,
			strconv.Itoa(r.records), repo.FormatMs(r.recordsTTL.Milliseconds())})
	if err != nil {
		return err
	}
	if err := settleReplies.Check(rep); err != nil {
		return repo.BadReply(ctx, r.Metrics, "webhook_settle", err)
	}
	if rep.Code() == repo.CodeStale {
		return webhooks.ErrLeaseLost
	}
	return nil
}

// Skip acknowledges entries the webhook does not subscribe to.
func (r *Store) Skip(ctx context.Context, w *webhooks.Webhook, streamIDs []string) error {
	stream := r.streamKey(r.Hasher.TenantTag(w.Tenant))
	err := r.Client.Do(ctx, r.Client.B().Xack().Key(stream).Group(w.ID).Id(streamIDs...).Build()).Error()
	return repo.CommandError("webhook skip", err)
}

var errShape = errors.New("unexpected XAUTOCLAIM reply")
