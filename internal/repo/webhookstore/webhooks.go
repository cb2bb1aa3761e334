package webhookstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/webhooks"
)

// The replies of the scripts (each script's header shows them).
var (
	createReplies = repo.ReplyShapes{repo.CodeOK: 1, repo.CodeExists: 0, repo.CodeQuota: 1}
	okReplies     = repo.ReplyShapes{repo.CodeOK: 0}
	addReplies    = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeBound: 0}
	groupReplies  = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeNotFound: 0}
	leaseReplies  = repo.ReplyShapes{repo.CodeClaimed: 0, repo.CodeStale: 0}
	settleReplies = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeStale: 0}
)

// Create registers the tenant for the deliverers first (a bounded global registry, refused with
// 422 when full), then one script in the tenant's slot counts the webhook in the tenant's quota
// (over it: 429, nothing written), writes it and creates its consumer group.
func (r *Store) Create(ctx context.Context, w *webhooks.Webhook, ttl time.Duration) (*webhooks.Webhook, error) {
	if !webhooks.ValidID(w.ID) || ttl < time.Second {
		return nil, fmt.Errorf("%w: webhook create: id %q, ttl %v", repo.ErrBadOptions, w.ID, ttl)
	}
	tag := r.Hasher.TenantTag(w.Tenant)
	exp := time.Now().Add(ttl + time.Minute).UnixMilli() // covers the gateway's clock being behind Redis's
	rep, err := r.writes.Script(ctx, "webhook_tenant_add", "webhook tenant add", scriptTenantAdd,
		[]string{r.registryKey()}, []string{tag, repo.FormatMs(exp), strconv.Itoa(MaxTenants)})
	if err != nil {
		return nil, err
	}
	if err := addReplies.Check(rep); err != nil {
		return nil, repo.BadReply(ctx, r.Metrics, "webhook_tenant_add", err)
	}
	if rep.Code() == repo.CodeBound {
		return nil, apperr.Newf(apperr.BoundExceeded, "The gateway serves webhooks for at most %d tenants.", MaxTenants)
	}
	rep, err = r.writes.Script(ctx, "webhook_create", "webhook create", scriptCreate,
		[]string{r.hashKey(tag, w.ID), r.quotaKey(tag), r.streamKey(tag)},
		[]string{w.ID, w.Tenant, w.URL, strings.Join(w.Events, " "), repo.FormatMs(ttl.Milliseconds()),
			strconv.Itoa(repo.SchemaVersion), strconv.Itoa(r.objects.Quota.Limit)})
	if err != nil {
		return nil, err
	}
	if err := createReplies.Check(rep); err != nil {
		return nil, repo.BadReply(ctx, r.Metrics, "webhook_create", err)
	}
	if rep.Code() == repo.CodeExists {
		return nil, fmt.Errorf("webhook create: %w", repo.ErrExists)
	}
	return r.objects.Created(ctx, "webhook_create", rep, w.Tenant, w.ID)
}

// Get returns the tenant's webhook, or NotFound (also for another tenant's).
func (r *Store) Get(ctx context.Context, tenant, id string) (*webhooks.Webhook, error) {
	if !webhooks.ValidID(id) {
		return nil, fmt.Errorf("webhook get: %w", apperr.NotFound)
	}
	w, err := r.objects.Get(ctx, r.Client, r.hashKey(r.Hasher.TenantTag(tenant), id), id)
	if err != nil {
		return nil, err
	}
	if w.Tenant != tenant {
		return nil, fmt.Errorf("webhook get: %w", apperr.NotFound)
	}
	return w, nil
}

// List is the tenant's webhooks, oldest first.
func (r *Store) List(ctx context.Context, tenant string) ([]*webhooks.Webhook, error) {
	ws, err := r.ListTag(ctx, r.Hasher.TenantTag(tenant))
	if err != nil {
		return nil, err
	}
	out := ws[:0]
	for _, w := range ws {
		if w.Tenant == tenant {
			out = append(out, w)
		}
	}
	return out, nil
}

// ListTag is the webhooks under a tenant's tag: the quota set's live members, each hash read
// (members whose hash has expired are skipped; the next create prunes them).
func (r *Store) ListTag(ctx context.Context, tag string) ([]*webhooks.Webhook, error) {
	now := repo.FormatMs(time.Now().UnixMilli())
	ids, err := r.Client.Do(ctx, r.Client.B().Zrange().Key(r.quotaKey(tag)).Min(now).Max("+inf").Byscore().Build()).AsStrSlice()
	if err != nil {
		return nil, repo.CommandError("webhook list", err)
	}
	cmds := make([]rueidis.Completed, 0, len(ids))
	for _, id := range ids {
		cmds = append(cmds, r.Client.B().Hgetall().Key(r.hashKey(tag, id)).Build())
	}
	out := make([]*webhooks.Webhook, 0, len(ids))
	for i, res := range r.Client.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err != nil {
			return nil, repo.CommandError("webhook list", err)
		}
		if len(m) == 0 {
			continue
		}
		w, err := r.objects.Decode(ctx, m, ids[i])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Delete removes the tenant's webhook with its group, lease and records; idempotent (another
// tenant's id names keys that do not exist).
func (r *Store) Delete(ctx context.Context, tenant, id string) error {
	if !webhooks.ValidID(id) {
		return nil
	}
	tag := r.Hasher.TenantTag(tenant)
	if _, err := r.Get(ctx, tenant, id); err != nil {
		if errors.Is(err, apperr.NotFound) {
			return nil
		}
		return err
	}
	rec := r.recordsKey(tag, id)
	rep, err := r.writes.Script(ctx, "webhook_delete", "webhook delete", scriptDelete,
		[]string{r.hashKey(tag, id), r.quotaKey(tag), r.streamKey(tag), r.leaseKey(tag, id), rec, rec + ":recent"},
		[]string{id})
	if err != nil {
		return err
	}
	if err := okReplies.Check(rep); err != nil {
		return repo.BadReply(ctx, r.Metrics, "webhook_delete", err)
	}
	return nil
}

// Deliveries are the webhook's most recent delivery records, newest first (malformed ones are
// logged by key pattern and skipped).
func (r *Store) Deliveries(ctx context.Context, tenant, id string) ([]webhooks.Delivery, error) {
	rec := r.recordsKey(r.Hasher.TenantTag(tenant), id)
	keys, err := r.Client.Do(ctx, r.Client.B().Zrange().Key(rec+":recent").Min("+inf").Max("-inf").
		Byscore().Rev().Limit(0, int64(r.records)).Build()).AsStrSlice()
	if err != nil {
		return nil, repo.CommandError("webhook deliveries", err)
	}
	m, err := r.hmget(ctx, rec, keys)
	if err != nil {
		return nil, err
	}
	out := make([]webhooks.Delivery, 0, len(keys))
	for _, k := range keys {
		if d, ok := m[k]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// Record keeps d as the webhook's record of message d.MessageID (a ping's), without a lease.
func (r *Store) Record(ctx context.Context, tenant, id string, d webhooks.Delivery) error {
	return r.settle(ctx, r.Hasher.TenantTag(tenant), id, "", d.MessageID, d)
}

// hmget reads the records named (those missing are left out; malformed ones logged).
func (r *Store) hmget(ctx context.Context, key string, fields []string) (map[string]webhooks.Delivery, error) {
	out := make(map[string]webhooks.Delivery, len(fields))
	if len(fields) == 0 {
		return out, nil
	}
	vals, err := r.Client.Do(ctx, r.Client.B().Hmget().Key(key).Field(fields...).Build()).ToArray()
	if err != nil {
		return nil, repo.CommandError("webhook records", err)
	}
	for i, v := range vals {
		s, err := v.ToString()
		if err != nil || i >= len(fields) {
			continue // absent (trimmed or expired)
		}
		d, ok := decodeRecord(s)
		if !ok {
			r.Metrics.Read(ctx, "webhook_delivery", repo.Corrupt)
			r.Log.ErrorContext(ctx, "corrupt object", "key", "webhookdeliveries:{wh_*}", "fields", []string{"record"})
			continue
		}
		out[fields[i]] = d
	}
	return out, nil
}
