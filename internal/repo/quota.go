package repo

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
)

// Tenant quotas: caps on a tenant's live objects of one type (GATEWAY_TENANT_MAX_*). Each is
// counted by a sorted set of the tenant's live ids scored by their expiry (ms, Redis time),
// under the tenant's hash tag, in the same script as the create: the script prunes members
// whose expiry has passed (ZREMRANGEBYSCORE on Redis TIME), refuses with {'QUOTA', ms until
// the earliest member expires} when the set is full, and adds the new id with the object. A
// delete removes its member in the script that deletes the object, and an expiry needs no
// event: the next create prunes it. So the count is the live objects, without drift.

// QuotaError is the 429 refusal of a create over quota (the quota's name as the problem
// names it, e.g. "tokens"), retryable once the earliest live object expires.
func QuotaError(quota, env string, limit int, retryMs int64) error {
	e := apperr.Newf(apperr.QuotaExceeded,
		"The tenant holds its maximum of %d live %s (%s); delete some or wait for them to expire.", limit, quota, env)
	e.RetryAfter = max(time.Duration(retryMs)*time.Millisecond, time.Second)
	e.Extra = map[string]any{"quota": quota, "limit": limit}
	return fmt.Errorf("%s quota: %w", quota, e)
}

// Quota is a tenant quota as its 429 names it: the objects counted ("quotes"), the variable
// that sets it, its limit.
type Quota struct {
	Name, Env string
	Limit     int
}

// QuotaRefusal answers a create's {'QUOTA', ms until the earliest live object expires}: the
// QuotaError of q, or a bad reply of script when the payload is not a number.
func QuotaRefusal(ctx context.Context, m *Metrics, script string, rep Reply, q Quota) error {
	wait, err := rep.Int(0)
	if err != nil {
		return BadReply(ctx, m, script, err)
	}
	return QuotaError(q.Name, q.Env, q.Limit, wait)
}

// TenantQuota is the quota of name, set by env, from a store's option: limit, def when 0; a
// limit outside 1..most is refused (ErrBadOptions).
func TenantQuota(name, env string, limit, def, most int) (Quota, error) {
	limit = cmp.Or(limit, def)
	if limit < 1 || limit > most {
		return Quota{}, fmt.Errorf("%w: %s per tenant %d not within 1..%d", ErrBadOptions, name, limit, most)
	}
	return Quota{Name: name, Env: env, Limit: limit}, nil
}
