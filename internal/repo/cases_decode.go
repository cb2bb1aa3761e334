package repo

import (
	"context"
	"fmt"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/cases"
)

// Reading a case's stored form: the case hash (current and previous schema) and its history
// entries.

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
