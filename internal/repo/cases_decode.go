package repo

import (
	"cmp"
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
		return nil, BadReply(ctx, r.m, name, err)
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
	r.m.Payload(ctx, "case", PayloadBytes(m))
	f := NewFields(m)
	outcome := f.Schema()
	c := &cases.Case{
		ID: f.Str("caseId"), Tenant: f.Str("tenantId"), SubjectRef: f.Str("subjectRef"), Status: f.Str("status"),
		EscalationLevel: int(f.Int64("escalationLevel")), DueAt: TimeFromMs(f.Int64("dueAtMs")),
		StateVersion: f.Int64("stateVersion"), SchemaVersion: int(f.OptInt64("schemaVersion")),
		ResolvedAt: TimeFromMs(f.OptInt64("resolvedAtMs")), AutoEscalatedAt: TimeFromMs(f.OptInt64("autoEscalatedAtMs")),
		CreatedAt: TimeFromMs(f.Int64("createdAtMs")), UpdatedAt: TimeFromMs(f.Int64("updatedAtMs")),
	}
	if outcome == OldSchema {
		c.AssignedTeam = cmp.Or(f.Opt("assignedTeam"), f.Opt("team"))
		c.LastTransitionAt = TimeFromMs(f.OptInt64("lastTransitionAtMs"))
		c.LastTransitionReason = f.Opt("lastTransitionReason")
		if c.AssignedTeam == "" {
			f.bad = append(f.bad, "team")
		}
	} else {
		c.AssignedTeam = f.Str("assignedTeam")
		c.LastTransitionAt = TimeFromMs(f.Int64("lastTransitionAtMs"))
		c.LastTransitionReason = f.Opt("lastTransitionReason")
	}
	switch c.Status {
	case cases.Open, cases.Escalated, cases.Resolved, "":
	default:
		f.bad = append(f.bad, "status")
	}
	if c.EscalationLevel < 0 || c.StateVersion < 1 {
		f.bad = append(f.bad, "escalationLevel|stateVersion")
	}
	if err := f.Err("case"); err != nil {
		r.m.Read(ctx, "case", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}", "fields", f.bad)
		return nil, err
	}
	r.m.Read(ctx, "case", outcome)
	return c, nil
}

func (r *Cases) decodeEvent(ctx context.Context, m map[string]string) (cases.Event, error) {
	f := NewFields(m)
	ev := cases.Event{
		At: TimeFromMs(f.Int64("atMs")), Transition: f.Str("transition"), FromStatus: f.Opt("fromStatus"),
		ToStatus: f.Str("toStatus"), EscalationLevel: int(f.Int64("escalationLevel")),
		AssignedTeam: f.Opt("assignedTeam"), Reason: f.Opt("reason"), Actor: f.Opt("actor"),
		StateVersion: f.Int64("stateVersion"),
	}
	if err := f.Err("case history"); err != nil {
		r.m.Read(ctx, "case_history", Corrupt)
		r.log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}:history", "fields", f.bad)
		return cases.Event{}, err
	}
	return ev, nil
}
