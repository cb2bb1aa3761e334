package casestore

import (
	"cmp"
	"context"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo"
)

// Reading a case's stored form: the case hash (current and previous schema) and its history
// entries.

// mapCase maps a case hash (repo.Objects.Decode classifies it). Schema 2 is current. Schema 1,
// the previous shape, named the team `team` and had no lastTransitionAtMs /
// lastTransitionReason; the scripts read `assignedTeam` falling back to `team` and never
// rewrite schemaVersion, so a v1 case stays readable until it expires.
func mapCase(f *repo.Fields, outcome repo.Outcome) *cases.Case {
	c := &cases.Case{
		ID: f.Str("caseId"), Tenant: f.Str("tenantId"), SubjectRef: f.Str("subjectRef"), Status: f.Str("status"),
		Assignee:        f.Opt("assignee"),
		EscalationLevel: int(f.Int64("escalationLevel")), DueAt: repo.TimeFromMs(f.Int64("dueAtMs")),
		StateVersion: f.Int64("stateVersion"), SchemaVersion: int(f.OptInt64("schemaVersion")),
		ResolvedAt: repo.TimeFromMs(f.OptInt64("resolvedAtMs")), AutoEscalatedAt: repo.TimeFromMs(f.OptInt64("autoEscalatedAtMs")),
		CreatedAt: repo.TimeFromMs(f.Int64("createdAtMs")), UpdatedAt: repo.TimeFromMs(f.Int64("updatedAtMs")),
	}
	if outcome == repo.OldSchema {
		c.AssignedTeam = cmp.Or(f.Opt("assignedTeam"), f.Opt("team"))
		c.LastTransitionAt = repo.TimeFromMs(f.OptInt64("lastTransitionAtMs"))
		c.LastTransitionReason = f.Opt("lastTransitionReason")
		if c.AssignedTeam == "" {
			f.Flag("team")
		}
	} else {
		c.AssignedTeam = f.Str("assignedTeam")
		c.LastTransitionAt = repo.TimeFromMs(f.Int64("lastTransitionAtMs"))
		c.LastTransitionReason = f.Opt("lastTransitionReason")
	}
	switch c.Status {
	case cases.Open, cases.Escalated, cases.Resolved, "":
	default:
		f.Flag("status")
	}
	if c.EscalationLevel < 0 || c.StateVersion < 1 {
		f.Flag("escalationLevel|stateVersion")
	}
	return c
}

// decodeEvent maps one history entry; a malformed one is refused with ErrCorrupt.
func (r *Store) decodeEvent(ctx context.Context, m map[string]string) (cases.Event, error) {
	f := repo.NewFields(m)
	ev := cases.Event{
		At: repo.TimeFromMs(f.Int64("atMs")), Transition: f.Str("transition"), FromStatus: f.Opt("fromStatus"),
		ToStatus: f.Str("toStatus"), EscalationLevel: int(f.Int64("escalationLevel")),
		AssignedTeam: f.Opt("assignedTeam"), Assignee: f.Opt("assignee"), Reason: f.Opt("reason"), Actor: f.Opt("actor"),
		StateVersion: f.Int64("stateVersion"),
	}
	if err := f.Err("case history"); err != nil {
		r.Metrics.Read(ctx, "case_history", repo.Corrupt)
		r.Log.ErrorContext(ctx, "corrupt object", "key", "case:{c_*}:history", "fields", f.Flagged())
		return cases.Event{}, err
	}
	return ev, nil
}
