package handlers

import (
	"context"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/page"
)

// CaseService is what the cases operations call (*cases.Service implements it).
type CaseService interface {
	Create(ctx context.Context, in cases.NewCase, key idempotency.Key,
		render func(*cases.Case) (idempotency.Response, error)) (idempotency.Result, error)
	Get(ctx context.Context, tenant, id string) (*cases.Case, error)
	Escalate(ctx context.Context, ch cases.Change) (*cases.Case, error)
	Assign(ctx context.Context, ch cases.Change) (*cases.Case, error)
	Resolve(ctx context.Context, ch cases.Change) (*cases.Case, error)
	Reopen(ctx context.Context, ch cases.Change) (*cases.Case, error)
	History(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[cases.Event], error)
	List(ctx context.Context, q cases.Query) (cases.Page, error)
}

var _ CaseService = (*cases.Service)(nil)

// moveCase runs one transition of the caller's case id: ch says what the body asks (the reason,
// an assignment), ifMatch the version it must be at (none: any). Every transition answers the
// case as written, with its ETag.
func (s *Server) moveCase(ctx context.Context, move func(context.Context, cases.Change) (*cases.Case, error),
	id string, ifMatch *string, ch cases.Change) (CaseTransitionedJSONResponse, error) {
	v, err := ifMatchVersion(ifMatch, false)
	if err != nil {
		return CaseTransitionedJSONResponse{}, err
	}
	p := caller(ctx)
	ch.Tenant, ch.ID, ch.IfMatch, ch.Actor = p.Tenant, id, v, caseActor(p)
	c, err := move(ctx, ch)
	if err != nil {
		return CaseTransitionedJSONResponse{}, err
	}
	return CaseTransitionedJSONResponse{Body: caseView(c), Headers: CaseTransitionedResponseHeaders{ETag: etagOf(c.StateVersion)}}, nil
}

// CreateCase opens a case; with an Idempotency-Key a retry replays the first 201.
func (s *Server) CreateCase(ctx context.Context, request CreateCaseRequestObject) (CreateCaseResponseObject, error) {
	p := caller(ctx)
	b := *request.Body
	b.DueAt = ts(b.DueAt.UTC()) // one instant, one request hash, whatever the offset it was written in
	in := cases.NewCase{Tenant: p.Tenant, SubjectRef: b.SubjectRef, AssignedTeam: b.AssignedTeam, Assignee: deref(b.Assignee), DueAt: b.DueAt.Time, Reason: b.Reason, Actor: caseActor(p)}
	out, err := s.Cases.Create(ctx, in, idempotency.Key{Value: request.Params.IdempotencyKey, Request: b},
		func(c *cases.Case) (idempotency.Response, error) {
			return createdJSON("/v1/cases/"+c.ID, c.StateVersion, caseView(c))
		})
	if err != nil {
		return nil, err
	}
	return createdResponse(out), nil
}

// GetCase returns the case with its ETag.
func (s *Server) GetCase(ctx context.Context, request GetCaseRequestObject) (GetCaseResponseObject, error) {
	c, err := s.Cases.Get(ctx, caller(ctx).Tenant, request.CaseId)
	if err != nil {
		return nil, err
	}
	return GetCase200JSONResponse{Body: caseView(c), Headers: GetCase200ResponseHeaders{ETag: etagOf(c.StateVersion)}}, nil
}

// EscalateCase raises the escalation level by one (409 max-escalation at the maximum).
func (s *Server) EscalateCase(ctx context.Context, request EscalateCaseRequestObject) (EscalateCaseResponseObject, error) {
	r, err := s.moveCase(ctx, s.Cases.Escalate, request.CaseId, request.Params.IfMatch, cases.Change{Reason: request.Body.Reason})
	return EscalateCase200JSONResponse{r}, err
}

// AssignCase hands the case to a team, and to a person within it when the body names one.
func (s *Server) AssignCase(ctx context.Context, request AssignCaseRequestObject) (AssignCaseResponseObject, error) {
	b := request.Body
	r, err := s.moveCase(ctx, s.Cases.Assign, request.CaseId, request.Params.IfMatch,
		cases.Change{Reason: deref(b.Reason), AssignedTeam: b.AssignedTeam, Assignee: deref(b.Assignee)})
	return AssignCase200JSONResponse{r}, err
}

// ResolveCase moves the case to RESOLVED.
func (s *Server) ResolveCase(ctx context.Context, request ResolveCaseRequestObject) (ResolveCaseResponseObject, error) {
	r, err := s.moveCase(ctx, s.Cases.Resolve, request.CaseId, request.Params.IfMatch, cases.Change{Reason: request.Body.Reason})
	return ResolveCase200JSONResponse{r}, err
}

// ReopenCase moves a RESOLVED case back to OPEN.
func (s *Server) ReopenCase(ctx context.Context, request ReopenCaseRequestObject) (ReopenCaseResponseObject, error) {
	r, err := s.moveCase(ctx, s.Cases.Reopen, request.CaseId, request.Params.IfMatch, cases.Change{Reason: request.Body.Reason})
	return ReopenCase200JSONResponse{r}, err
}

// GetCaseHistory lists the case's transitions, newest first.
func (s *Server) GetCaseHistory(ctx context.Context, request GetCaseHistoryRequestObject) (GetCaseHistoryResponseObject, error) {
	events, err := s.Cases.History(ctx, caller(ctx).Tenant, request.CaseId, deref(request.Params.Cursor), pageSize(request.Params.Limit))
	if err != nil {
		return nil, err
	}
	return GetCaseHistory200JSONResponse{Body: CaseHistory{Items: views(events.Items, caseHistoryEntry), NextCursor: stringOrNil(events.NextCursor)},
		Headers: GetCaseHistory200ResponseHeaders{Link: nextLink(ctx, events.NextCursor)}}, nil
}

func caseHistoryEntry(ev cases.Event) CaseHistoryEntry {
	return CaseHistoryEntry{At: ts(ev.At), Transition: CaseHistoryEntryTransition(ev.Transition),
		FromStatus: stringOrNil(ev.FromStatus), ToStatus: CaseStatus(ev.ToStatus), EscalationLevel: ev.EscalationLevel,
		AssignedTeam: stringOrNil(ev.AssignedTeam), Assignee: stringOrNil(ev.Assignee), Reason: stringOrNil(ev.Reason), Actor: stringOrNil(ev.Actor),
		StateVersion: ev.StateVersion}
}

func caseView(c *cases.Case) Case {
	return Case{
		CaseId: c.ID, TenantId: c.Tenant, SubjectRef: c.SubjectRef, Status: CaseStatus(c.Status), AssignedTeam: c.AssignedTeam,
		Assignee:        stringOrNil(c.Assignee),
		EscalationLevel: c.EscalationLevel, DueAt: ts(c.DueAt), StateVersion: c.StateVersion,
		LastTransitionAt: tsOrNil(c.LastTransitionAt), LastTransitionReason: stringOrNil(c.LastTransitionReason),
		ResolvedAt: tsOrNil(c.ResolvedAt), CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt),
	}
}

// caseActor names the caller in a case's history: the token's subject, bounded.
func caseActor(p *auth.Principal) string {
	a := p.Subject
	if len(a) > 128 {
		a = a[:128]
	}
	return a
}
