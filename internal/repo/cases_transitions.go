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
	rep, err := runScript(ctx, r.c, r.m, script, "case "+name, scriptCaseTransition, r.caseKeys(ch.ID),
		[]string{name, ch.Tenant, ifMatchArg(ch.IfMatch), reason, ch.Actor, ms(ttl.Milliseconds()),
			strconv.Itoa(r.o.HistoryMax), strconv.Itoa(r.o.MaxEscalation), ch.AssignedTeam})
	if err != nil {
		return nil, err
	}
	r.m.Transition(ctx, "case", name, outcomeOf(rep.Code()))
	arg, err := caseTransitionReplies.read(rep)
	if err != nil {
		return nil, badReply(ctx, r.m, script, err)
	}
	switch rep.Code() {
	case CodeOK:
		return r.decodeReply(ctx, script, rep, ch.ID)
	case CodeNotFound:
		return nil, fmt.Errorf("case %s: %w", name, rep.Err(""))
	case CodeStale:
		r.m.Event(ctx, "case", "cas_conflict")
		return nil, staleError(arg)
	case CodeInvalidStatus:
		return nil, apperr.Newf(apperr.InvalidStatus, "Cannot %s a case that is %s.", name, arg)
	case CodeMaxEscalation:
		return nil, apperr.Newf(apperr.MaxEscalation, "The case is at escalation level %s, the maximum.", arg).
			With("maxEscalationLevel", r.o.MaxEscalation)
	default: // CodeCorrupt, the one code left (read checked the code is the table's)
		return nil, corruptError(ctx, r.m, r.log, script, "case", "case:{c_*}", arg)
	}
}

func (r *Cases) caseKeys(id string) []string { return []string{r.hashKey(id), r.historyKey(id)} }

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
	return ms(v)
}

// decodeReply decodes the case hash a script answered as the first value of its payload.
func (r *Cases) decodeReply(ctx context.Context, name string, rep Reply, id string) (*cases.Case, error) {
	m, err := rep.StrMap(0)
	if err != nil {
		return nil, badReply(ctx, r.m, name, err)
	}
	return r.decode(ctx, m, id)
}

// decode classifies and maps a case hash. Schema 2 is current. Schema 1, the previous shape,
// named the team `team` and had no lastTransitionAtMs / lastTransitionReason; the scripts
// read `assignedTeam` falling back to `team` and never rewrite schemaVersion, so a v1 case
// stays readable until it expires.
func (r *Cases) decode(ctx context.Context, m map[string]string, id string) (*cases.Case, error) {
	if len(m) == 0 {
		r.m.Read(ctx, "case", Missing)
		return nil, fmt.Errorf("case %s: %w", id, apperr.NotFound)
	}
	r.m.Payload(ctx, "case", payloadBytes(m))
	f := newFields(m)
	outcome := f.schema()
	c := &cases.Case{
		ID: f.str("caseId"), Tenant: f.str("tenantId"), SubjectRef: f.str("subjectRef"), Status: f.str("status"),
		EscalationLevel: int(f.int64("escalationLevel")), DueAt: msTime(f.int64("dueAtMs")),
		StateVersion: f.int64("stateVersion"), SchemaVersion: int(f.optInt64("schemaVersion")),
		ResolvedAt: msTime(f.optInt64("resolvedAtMs")), AutoEscalatedAt: msTime(f.optInt64("autoEscalatedAtMs")),
		CreatedAt: msTime(f.int64("createdAtMs")), UpdatedAt: msTime(f.int64("updatedAtMs")),
	}
	if outcome == OldSchema {
		c.AssignedTeam = firstNonEmpty(f.opt("assignedTeam"), f.opt("team"))
		c.LastTransitionAt = msTime(f.optInt64("lastTransitionAtMs"))
		c.LastTransitionReason = f.opt("lastTransitionReason")
		if c.AssignedTeam == "" {
			f.bad = append(f.bad, "team")
		}
	} else {
		c.AssignedTeam = f.str("assignedTeam")
		c.LastTransitionAt = msTime(f.int64("lastTransitionAtMs"))
		c.LastTransitionReason = f.opt("lastTransitionReason")
	}
	switch c.Status {
	case cases.Open, cases.Escalated, cases.Resolved, "":
	default:
		f.bad = append(f.bad, "status")
	}
	if c.EscalationLevel < 0 || c.StateVersion < 1 {
		f.bad = append(f.bad, "escalationLevel|stateVersion")
	}
	if err := f.err("case"); err != nil {
		r.m.Read(ctx, "case", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}", "fields", f.bad)
		return nil, err
	}
	r.m.Read(ctx, "case", outcome)
	return c, nil
}

func (r *Cases) decodeEvent(ctx context.Context, m map[string]string) (cases.Event, error) {
	f := newFields(m)
	ev := cases.Event{
		At: msTime(f.int64("atMs")), Transition: f.str("transition"), FromStatus: f.opt("fromStatus"),
		ToStatus: f.str("toStatus"), EscalationLevel: int(f.int64("escalationLevel")),
		AssignedTeam: f.opt("assignedTeam"), Reason: f.opt("reason"), Actor: f.opt("actor"),
		StateVersion: f.int64("stateVersion"),
	}
	if err := f.err("case history"); err != nil {
		r.m.Read(ctx, "case_history", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}:history", "fields", f.bad)
		return cases.Event{}, err
	}
	return ev, nil
}
