package casestore

import (
	"cmp"
	"context"
	"regexp"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo"
)

// How the sweepers find overdue cases on any topology:
//
//   - Each tenant has a due index, a ZSET <p>:v1:casedue:{<tenantTag>} of case ids scored by
//     dueAtMs. It cannot share a slot with the cases (each case has its own tag), so it is a hint:
//     the auto-escalation script re-checks status and due time on the case itself.
//   - Tenants are found through one small registry ZSET <p>:v1:casetenants:{all} of tenant tags
//     scored by their last registration (server time), bounded to MaxTenants and expiring
//     OpenTTL+1h after the last write. It is a single key, so it works unchanged on a cluster
//     (no SCAN over every master, no cross-slot command). Tenants unregistered for longer than
//     that horizon are pruned by the sweepers: their due indexes have expired too.

// autoReplies: case_auto_escalate answers {'OK', HGETALL case} or why the sweeper's escalation
// did not happen.
var autoReplies = repo.ReplyShapes{
	repo.CodeOK: 1, repo.CodeGone: 0, repo.CodeNotOpen: 1, repo.CodeAlready: 0, repo.CodeNotDue: 1, repo.CodeMaxEscalation: 1, repo.CodeCorrupt: 1,
}

var tenantTagPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// SweepTenants prunes the registry and returns the tenant tags with a due index, and the
// server's clock (so every replica judges "due" by the same time).
func (r *Store) SweepTenants(ctx context.Context) ([]string, time.Time, error) {
	horizon := r.openTTL + tenantRegistryMargin
	rep, err := repo.RunScript(ctx, r.Client, r.Metrics, "case_tenants", "case tenants", scriptTenants, []string{r.registryKey()},
		[]string{repo.FormatMs(horizon.Milliseconds()), strconv.Itoa(MaxTenants)})
	if err != nil {
		return nil, time.Time{}, err
	}
	// {'OK', nowMs, tenantTag...}
	if rep.Code() != repo.CodeOK {
		return nil, time.Time{}, repo.BadReply(ctx, r.Metrics, "case_tenants", rep.Unexpected())
	}
	now, err := rep.Int(0)
	tags, tagsErr := rep.Strs(1)
	if err = cmp.Or(err, tagsErr); err != nil {
		return nil, time.Time{}, repo.BadReply(ctx, r.Metrics, "case_tenants", err)
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
func (r *Store) DueCases(ctx context.Context, tenantTag string, now time.Time, limit int) ([]string, error) {
	if !tenantTagPattern.MatchString(tenantTag) || limit < 1 {
		return nil, nil
	}
	ids, err := r.Client.Do(ctx, r.Client.B().Zrangebyscore().Key(r.dueKey(tenantTag)).Min("-inf").
		Max(repo.FormatMs(now.UnixMilli())).Limit(0, int64(limit)).Build()).AsStrSlice()
	if err != nil {
		return nil, repo.CommandError("case due", err)
	}
	return ids, nil
}

// Undue removes case ids from the tenant's due index.
func (r *Store) Undue(ctx context.Context, tenantTag string, ids ...string) error {
	if !tenantTagPattern.MatchString(tenantTag) || len(ids) == 0 {
		return nil
	}
	err := r.Client.Do(ctx, r.Client.B().Zrem().Key(r.dueKey(tenantTag)).Member(ids...).Build()).Error()
	return repo.CommandError("case undue", err)
}

// AutoEscalate escalates the tenant's case once with reason auto_escalate when it is still
// OPEN, due by the server's clock and never auto-escalated before; the script decides
// atomically.
func (r *Store) AutoEscalate(ctx context.Context, tenantTag, id string) (cases.AutoOutcome, error) {
	if !caseIDPattern.MatchString(id) || !tenantTagPattern.MatchString(tenantTag) {
		return cases.AutoGone, nil
	}
	const script = "case_auto_escalate"
	args := []string{strconv.Itoa(r.maxEscalation), repo.FormatMs(r.openTTL.Milliseconds()), strconv.Itoa(r.historyMax), cases.SweeperActor, id,
		r.statusTags, r.levelTags, r.envelope(ctx, "")}
	keys := r.moveKeys(tenantTag, id)
	rep, err := r.writes.Script(ctx, script, "case auto-escalate", scriptAuto, keys, args)
	if err != nil {
		return "", err
	}
	arg, err := autoReplies.Read(rep)
	if err != nil {
		return "", repo.BadReply(ctx, r.Metrics, script, err)
	}
	var o cases.AutoOutcome
	switch rep.Code() {
	case repo.CodeOK:
		if _, err := r.objects.DecodeReply(ctx, script, rep, id); err != nil {
			return "", err
		}
		o = cases.AutoEscalated
	case repo.CodeGone:
		o = cases.AutoGone
	case repo.CodeNotOpen:
		o = cases.AutoNotOpen
	case repo.CodeAlready:
		o = cases.AutoAlready
	case repo.CodeNotDue:
		o = cases.AutoNotDue
	case repo.CodeMaxEscalation:
		o = cases.AutoAtMax
	default: // repo.CodeCorrupt, the one code left (read checked the code is the table's)
		return cases.AutoCorrupt, repo.CorruptError(ctx, r.Metrics, r.Log, script, "case", "case:{c_*}", arg)
	}
	r.Metrics.Transition(ctx, "case", "auto_escalate", string(o))
	return o, nil
}
