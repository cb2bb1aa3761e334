package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/cases"
)

// ListCases answers one page of the caller's tenant's cases; assignee=me is the caller's own
// subject.
func (s *Server) ListCases(ctx context.Context, request ListCasesRequestObject) (ListCasesResponseObject, error) {
	page, err := s.Cases.List(ctx, caseQuery(caller(ctx), request.Params, pageSize(request.Params.Limit)))
	if err != nil {
		return nil, err
	}
	out := CasePage{Items: views(page.Items, caseSummaryView), NextCursor: stringOrNil(page.NextCursor)}
	return ListCases200JSONResponse{Body: out, Headers: ListCases200ResponseHeaders{Link: nextLink(ctx, page.NextCursor)}}, nil
}

// caseQuery is the list request of the caller p: its tenant, the filters, assignee=me as p's
// subject.
func caseQuery(p *auth.Principal, q ListCasesParams, limit int) cases.Query {
	in := cases.Query{Tenant: p.Tenant, Team: deref(q.AssignedTeam), Assignee: deref(q.Assignee), Level: q.EscalationLevel,
		Overdue: q.Overdue, Subject: deref(q.SubjectRef), Order: string(deref(q.Order)), Limit: limit, Cursor: deref(q.Cursor)}
	if in.Assignee == cases.Me {
		in.Assignee = p.Subject
	}
	for _, st := range deref(q.Status) {
		in.Statuses = append(in.Statuses, string(st))
	}
	return in
}

// caseSummaryView is c as a list item: without the tenant (the caller's) and the last
// transition's reason (GET /v1/cases/{caseId} has it), so a page of 100 stays under 64 KiB.
func caseSummaryView(c *cases.Case) CaseSummary {
	return CaseSummary{
		CaseId: c.ID, SubjectRef: c.SubjectRef, Status: CaseStatus(c.Status), AssignedTeam: c.AssignedTeam,
		Assignee: stringOrNil(c.Assignee), EscalationLevel: c.EscalationLevel, DueAt: ts(c.DueAt), StateVersion: c.StateVersion,
		LastTransitionAt: tsOrNil(c.LastTransitionAt), ResolvedAt: tsOrNil(c.ResolvedAt), CreatedAt: ts(c.CreatedAt),
		UpdatedAt: ts(c.UpdatedAt),
	}
}
