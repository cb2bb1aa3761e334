package repo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
)

// Escalate moves an OPEN or ESCALATED case one level up (ESCALATED), up to the maximum.
func (r *Cases) Escalate(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	if err := r.checkChange(ch); err != nil {
		return nil, err
	}
	return r.transition(ctx, "escalate", ch, ch.Reason, r.o.OpenTTL)
}

// Assign hands an OPEN or ESCALATED case to another team.
func (r *Cases) Assign(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	if err := r.checkChange(ch); err != nil {
		return nil, err
	}
	return r.transition(ctx, "assign", ch, ch.Reason, r.o.OpenTTL)
}

// Resolve moves an OPEN or ESCALATED case to RESOLVED; it then expires ResolvedTTL later.
func (r *Cases) Resolve(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	if err := r.checkChange(ch); err != nil {
		return nil, err
	}
	return r.transition(ctx, "resolve", ch, ch.Reason, r.o.ResolvedTTL)
}

// Reopen moves a RESOLVED case back to OPEN. A case the sweeper never escalated goes back in
// its tenant's due index (after the transition, as a separate step: the index is only a hint,
// the auto-escalation script re-checks everything).
func (r *Cases) Reopen(ctx context.Context, ch cases.Change) (*cases.Case, error) {
	if err := r.checkChange(ch); err != nil {
		return nil, err
	}
	c, err := r.transition(ctx, "reopen", ch, ch.Reason, r.o.OpenTTL)
	if err != nil || !c.AutoEscalatedAt.IsZero() {
		return c, err
	}
	tag := r.TenantTag(ch.Tenant)
	if err := r.register(ctx, tag); err != nil {
		r.log.WarnContext(ctx, "reopened case not re-indexed", "key", "casetenants:{all}", "err", err)
		return c, nil
	}
	if err := r.index(ctx, tag, c.ID, c.DueAt); err != nil {
		r.log.WarnContext(ctx, "reopened case not re-indexed", "key", "casedue:{*}", "err", err)
	}
	return c, nil
}

// transition runs case_transition.lua for one manual transition; ttl is what both keys get.
func (r *Cases) transition(ctx context.Context, name string, ch cases.Change, reason string, ttl time.Duration) (*cases.Case, error) {
	const script = "case_transition"
	args := []string{name, ch.Tenant, ifMatchArg(ch.IfMatch), reason, ch.Actor, FormatMs(ttl.Milliseconds()),
		strconv.Itoa(r.o.HistoryMax), strconv.Itoa(r.o.MaxEscalation), ch.AssignedTeam, ch.ID}
	rep, err := RunScript(ctx, r.c, r.m, script, "case "+name, scriptCaseTransition, r.caseKeys(r.TenantTag(ch.Tenant), ch.ID), args)
	if err != nil {
		return nil, err
	}
	r.m.Transition(ctx, "case", name, OutcomeOf(rep.Code()))
	arg, err := caseTransitionReplies.Read(rep)
	if err != nil {
		return nil, BadReply(ctx, r.m, script, err)
	}
	switch rep.Code() {
	case CodeOK:
		return r.decodeReply(ctx, script, rep, ch.ID)
	case CodeNotFound:
		return nil, fmt.Errorf("case %s: %w", name, rep.Err(""))
	case CodeStale:
		r.m.Event(ctx, "case", "cas_conflict")
		return nil, StaleError(arg)
	case CodeInvalidStatus:
		return nil, apperr.Newf(apperr.InvalidStatus, "Cannot %s a case that is %s.", name, arg)
	case CodeMaxEscalation:
		return nil, apperr.Newf(apperr.MaxEscalation, "The case is at escalation level %s, the maximum.", arg).
			With("maxEscalationLevel", r.o.MaxEscalation)
	default: // CodeCorrupt, the one code left (read checked the code is the table's)
		return nil, CorruptError(ctx, r.m, r.log, script, "case", "case:{c_*}", arg)
	}
}

// checkChange guards the keys: an id that cannot be a case's is not found. The transition's
// rules are the service's (cases.Service).
func (r *Cases) checkChange(ch cases.Change) error {
	if !caseIDPattern.MatchString(ch.ID) {
		return fmt.Errorf("case: %w", apperr.NotFound)
	}
	return nil
}

func ifMatchArg(v int64) string {
	if v < 0 {
		return ""
	}
	return FormatMs(v)
}
