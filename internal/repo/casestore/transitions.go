package casestore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo"
)

// Escalate moves an OPEN or ESCALATED case one level up (ESCALATED), up to the maximum.
func (r *Store) Escalate(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	return r.transition(ctx, "escalate", ch, r.openTTL)
}

// Assign hands an OPEN or ESCALATED case to a team, and to a person within it or to the team's
// queue (ch.Assignee empty).
func (r *Store) Assign(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	return r.transition(ctx, "assign", ch, r.openTTL)
}

// Resolve moves an OPEN or ESCALATED case to RESOLVED; it then expires ResolvedTTL later.
func (r *Store) Resolve(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	return r.transition(ctx, "resolve", ch, r.resolvedTTL)
}

// Reopen moves a RESOLVED case back to OPEN. A case the sweeper never escalated goes back in
// its tenant's due index (after the transition, as a separate step: the index is only a hint,
// the auto-escalation script re-checks everything).
func (r *Store) Reopen(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	c, err := r.transition(ctx, "reopen", ch, r.openTTL)
	if err != nil || !c.AutoEscalatedAt.IsZero() {
		return c, err
	}
	tag := r.TenantTag(ch.Tenant)
	if err := r.register(ctx, tag); err != nil {
		r.Log.WarnContext(ctx, "reopened case not re-indexed", "key", "casetenants:{all}", "err", err)
		return c, nil
	}
	if err := r.index(ctx, tag, c.ID, c.DueAt); err != nil {
		r.Log.WarnContext(ctx, "reopened case not re-indexed", "key", "casedue:{*}", "err", err)
	}
	return c, nil
}

// transitionReplies: case_transition answers {'OK', HGETALL case} or a refusal.
var transitionReplies = repo.ReplyShapes{
	repo.CodeOK: 1, repo.CodeNotFound: 0, repo.CodeStale: 1, repo.CodeInvalidStatus: 1, repo.CodeMaxEscalation: 1, repo.CodeCorrupt: 1,
}

// transition runs case_transition.lua for one manual transition; ttl is what both keys get.
// An id that cannot be a case's is not found (the key guard; the transition's rules are the
// service's, cases.Service).
func (r *Store) transition(ctx context.Context, name string, ch cases.Change, ttl time.Duration) (*cases.Case, error) {
	if !caseIDPattern.MatchString(ch.ID) {
		return nil, fmt.Errorf("case %s: %w", name, apperr.NotFound)
	}
	args := []string{name, ch.Tenant, repo.IfMatchArg(ch.IfMatch), ch.Reason, ch.Actor, repo.FormatMs(ttl.Milliseconds()),
		strconv.Itoa(r.historyMax), strconv.Itoa(r.maxEscalation), ch.AssignedTeam, ch.ID,
		ch.Assignee, r.indexTag("team", ch.AssignedTeam), r.indexTag("assignee", ch.Assignee), r.statusTags, r.levelTags, r.envelope(ctx, ch.Tenant)}
	tag := r.TenantTag(ch.Tenant)
	return r.objects.Transition(ctx, r.writes, repo.Change{Script: "case_transition", Name: name, Lua: scriptTransition,
		Keys: r.moveKeys(tag, ch.ID), Args: args, Replies: transitionReplies, ID: ch.ID},
		func(code repo.Code, arg string) error {
			if code == repo.CodeInvalidStatus {
				return apperr.Newf(apperr.InvalidStatus, "Cannot %s a case that is %s.", name, arg)
			}
			// repo.CodeMaxEscalation, the one code left (transitionReplies declares the codes)
			return apperr.Newf(apperr.MaxEscalation, "The case is at escalation level %s, the maximum.", arg).
				With("maxEscalationLevel", r.maxEscalation)
		})
}
