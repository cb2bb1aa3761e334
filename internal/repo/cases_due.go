package repo

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
)

// How the sweepers find overdue cases on any topology:
//
//   - Each tenant has a due index, a ZSET <p>:v1:casedue:{<tenantTag>} of case ids scored by
//     dueAtMs. It cannot share a slot with the cases (each case has its own tag), so it is a hint:
//     the auto-escalation script re-checks status and due time on the case itself.
//   - Tenants are found through one small registry ZSET <p>:v1:casetenants:{all} of tenant tags
//     scored by their last registration (server time), bounded to MaxCaseTenants and expiring
//     OpenTTL+1h after the last write. It is a single key, so it works unchanged on a cluster
//     (no SCAN over every master, no cross-slot command). Tenants unregistered for longer than
//     that horizon are pruned by the sweepers: their due indexes have expired too.

var tenantTagPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// SweepTenants prunes the registry and returns the tenant tags with a due index, and the
// server's clock (so every replica judges "due" by the same time).
func (r *Cases) SweepTenants(ctx context.Context) ([]string, time.Time, error) {
	horizon := r.o.OpenTTL + tenantRegistryMargin
	code, rest, err := scriptReply(scriptCaseTenants.Exec(ctx, r.c, []string{r.registryKey()},
		[]string{ms(horizon.Milliseconds()), strconv.Itoa(MaxCaseTenants)}))
	if err != nil {
		r.m.ScriptError(ctx, "case_tenants")
		return nil, time.Time{}, redisErr("case tenants", err)
	}
	if code != "OK" || len(rest) != 2 {
		return nil, time.Time{}, r.unexpected(ctx, "case_tenants", code)
	}
	now, ok := argInt(rest, 0)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("case tenants: %w", errReplyShape)
	}
	tags, err := rest[1].AsStrSlice()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("case tenants: %w", err)
	}
	out := tags[:0]
	for _, t := range tags {
		if tenantTagPattern.MatchString(t) {
			out = append(out, t)
		}
	}
	return out, time.UnixMilli(now).UTC(), nil
}

// DueCases returns up to limit case ids of the tenant due at or before now, earliest first.
func (r *Cases) DueCases(ctx context.Context, tenantTag string, now time.Time, limit int) ([]string, error) {
	if !tenantTagPattern.MatchString(tenantTag) || limit < 1 {
		return nil, nil
	}
	ids, err := r.c.Do(ctx, r.c.B().Zrangebyscore().Key(r.dueKey(tenantTag)).Min("-inf").
		Max(ms(now.UnixMilli())).Limit(0, int64(limit)).Build()).AsStrSlice()
	if err != nil {
		return nil, redisErr("case due", err)
	}
	return ids, nil
}

// Undue removes case ids from the tenant's due index.
func (r *Cases) Undue(ctx context.Context, tenantTag string, ids ...string) error {
	if !tenantTagPattern.MatchString(tenantTag) || len(ids) == 0 {
		return nil
	}
	err := r.c.Do(ctx, r.c.B().Zrem().Key(r.dueKey(tenantTag)).Member(ids...).Build()).Error()
	return redisErr("case undue", err)
}

// AutoEscalate escalates the case once with reason AUTO_ESCALATION when it is still OPEN, due
// by the server's clock and never auto-escalated before; the script decides atomically.
func (r *Cases) AutoEscalate(ctx context.Context, id string) (cases.AutoOutcome, error) {
	if !caseIDPattern.MatchString(id) {
		return cases.AutoGone, nil
	}
	res := scriptCaseAuto.Exec(ctx, r.c, r.caseKeys(id), []string{strconv.Itoa(r.o.MaxEscalation),
		ms(r.o.OpenTTL.Milliseconds()), strconv.Itoa(r.o.HistoryMax), cases.SweeperActor})
	code, rest, err := scriptReply(res)
	if err != nil {
		r.m.ScriptError(ctx, "case_auto_escalate")
		return "", redisErr("case auto-escalate", err)
	}
	var o cases.AutoOutcome
	switch code {
	case "OK":
		if _, err := r.decodeReply(ctx, rest, id); err != nil {
			return "", err
		}
		o = cases.AutoEscalated
	case "GONE":
		o = cases.AutoGone
	case "NOT_OPEN":
		o = cases.AutoNotOpen
	case "ALREADY":
		o = cases.AutoAlready
	case "NOT_DUE":
		o = cases.AutoNotDue
	case "MAX_ESCALATION":
		o = cases.AutoAtMax
	case "CORRUPT":
		r.m.Read(ctx, "case", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}", "script", "case_auto_escalate", "fields", []string{argString(rest, 0)})
		return cases.AutoCorrupt, fmt.Errorf("%w: case hash has malformed fields [%s]", ErrCorrupt, argString(rest, 0))
	default:
		return "", r.unexpected(ctx, "case_auto_escalate", code)
	}
	r.m.Transition(ctx, "case", "auto_escalate", string(o))
	return o, nil
}
