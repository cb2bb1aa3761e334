package repo

import (
	"cmp"
	"context"
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
	rep, err := RunScript(ctx, r.c, r.m, "case_tenants", "case tenants", scriptCaseTenants, []string{r.registryKey()},
		[]string{FormatMs(horizon.Milliseconds()), strconv.Itoa(MaxCaseTenants)})
	if err != nil {
		return nil, time.Time{}, err
	}
	// {'OK', nowMs, tenantTag...}
	if rep.Code() != CodeOK {
		return nil, time.Time{}, BadReply(ctx, r.m, "case_tenants", rep.Unexpected())
	}
	now, err := rep.Int(0)
	tags, tagsErr := rep.Strs(1)
	if err = cmp.Or(err, tagsErr); err != nil {
		return nil, time.Time{}, BadReply(ctx, r.m, "case_tenants", err)
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
		Max(FormatMs(now.UnixMilli())).Limit(0, int64(limit)).Build()).AsStrSlice()
	if err != nil {
		return nil, CommandError("case due", err)
	}
	return ids, nil
}

// Undue removes case ids from the tenant's due index.
func (r *Cases) Undue(ctx context.Context, tenantTag string, ids ...string) error {
	if !tenantTagPattern.MatchString(tenantTag) || len(ids) == 0 {
		return nil
	}
	err := r.c.Do(ctx, r.c.B().Zrem().Key(r.dueKey(tenantTag)).Member(ids...).Build()).Error()
	return CommandError("case undue", err)
}

// AutoEscalate escalates the tenant's case once with reason auto_escalate when it is still
// OPEN, due by the server's clock and never auto-escalated before; the script decides
// atomically.
func (r *Cases) AutoEscalate(ctx context.Context, tenantTag, id string) (cases.AutoOutcome, error) {
	if !caseIDPattern.MatchString(id) || !tenantTagPattern.MatchString(tenantTag) {
		return cases.AutoGone, nil
	}
	const script = "case_auto_escalate"
	args := []string{strconv.Itoa(r.o.MaxEscalation), FormatMs(r.o.OpenTTL.Milliseconds()), strconv.Itoa(r.o.HistoryMax), cases.SweeperActor, id}
	rep, err := RunScript(ctx, r.c, r.m, script, "case auto-escalate", scriptCaseAuto, r.caseKeys(tenantTag, id), args)
	if err != nil {
		return "", err
	}
	arg, err := caseAutoReplies.Read(rep)
	if err != nil {
		return "", BadReply(ctx, r.m, script, err)
	}
	var o cases.AutoOutcome
	switch rep.Code() {
	case CodeOK:
		if _, err := r.decodeReply(ctx, script, rep, id); err != nil {
			return "", err
		}
		o = cases.AutoEscalated
	case CodeGone:
		o = cases.AutoGone
	case CodeNotOpen:
		o = cases.AutoNotOpen
	case CodeAlready:
		o = cases.AutoAlready
	case CodeNotDue:
		o = cases.AutoNotDue
	case CodeMaxEscalation:
		o = cases.AutoAtMax
	default: // CodeCorrupt, the one code left (read checked the code is the table's)
		return cases.AutoCorrupt, CorruptError(ctx, r.m, r.log, script, "case", "case:{c_*}", arg)
	}
	r.m.Transition(ctx, "case", "auto_escalate", string(o))
	return o, nil
}
