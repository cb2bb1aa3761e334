package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/cases"
)

// ListCases answers one page of the caller's tenant's cases; assignee=me is the caller's own
// subject.
func (s *Server) ListCases(ctx context.Context, request ListCasesRequestObject) (ListCasesResponseObject, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	q := request.Params
	limit, err := pageLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	in := cases.Query{Tenant: p.Tenant, Team: deref(q.AssignedTeam), Assignee: deref(q.Assignee), Level: q.EscalationLevel,
		Overdue: q.Overdue, Subject: deref(q.SubjectRef), Order: string(deref(q.Order)), Limit: limit, Cursor: deref(q.Cursor)}
	if in.Assignee == cases.Me {
		in.Assignee = p.Subject
	}
	for _, st := range deref(q.Status) {
		in.Statuses = append(in.Statuses, string(st))
	}
	page, err := s.Cases.List(ctx, in)
	if err != nil {
		return nil, err
	}
	out := CasePage{Items: make([]Case, 0, len(page.Items))}
	for _, c := range page.Items {
		out.Items = append(out.Items, caseView(c))
	}
	if page.NextCursor != "" {
		out.NextCursor = &page.NextCursor
	}
	return ListCases200JSONResponse{Body: out, Headers: ListCases200ResponseHeaders{Link: nextLink(ctx, page.NextCursor)}}, nil
}
