// Package cases is the escalation-case domain: its model (a case, its transitions, its
// history), the rules a case's fields and transitions obey, the service the HTTP operations
// call, and the sweeper that escalates overdue cases by themselves. Cases are kept by a Store
// (internal/repo/casestore implements it) whose scripts check status and version atomically.
package cases

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/page"
)

// Store keeps cases (*casestore.Store implements it). Transitions compare Change.IfMatch with the
// case's stateVersion when it is set and answer the case as written.
type Store interface {
	Create(ctx context.Context, in NewCase) (*Case, error)
	Get(ctx context.Context, tenant, id string) (*Case, error)
	Escalate(ctx context.Context, ch Change) (*Case, error)
	Assign(ctx context.Context, ch Change) (*Case, error)
	Resolve(ctx context.Context, ch Change) (*Case, error)
	Reopen(ctx context.Context, ch Change) (*Case, error)
	// History is at most n entries of the case's history, newest first, strictly older than
	// the entry at position before ("" for the newest); a malformed before is a 400 naming
	// `cursor`.
	History(ctx context.Context, tenant, id, before string, n int) ([]Event, error)
	// List answers one page of a checked query (list.go), from the tenant's indexes.
	List(ctx context.Context, q Query) (Page, error)
}

// ErrConfig reports a bad New argument.
var ErrConfig = errors.New("cases: bad configuration")

// reassigned is the reason an assignment records when the caller gives none.
const reassigned = "REASSIGNED"

// Service opens, reads and moves escalation cases. It is safe for concurrent use.
type Service struct {
	store Store
	once  *idempotency.Service
}

// New returns the service over store; once runs idempotent creates.
func New(store Store, once *idempotency.Service) (*Service, error) {
	if store == nil || once == nil {
		return nil, fmt.Errorf("%w: cases need a store and an idempotency service", ErrConfig)
	}
	return &Service{store: store, once: once}, nil
}

// Create opens a case. With an Idempotency-Key a retry replays the first response; render
// makes that response from the new case.
func (s *Service) Create(ctx context.Context, in NewCase, key idempotency.Key,
	render func(*Case) (idempotency.Response, error)) (idempotency.Result, error) {
	return s.once.Do(ctx, "createCase", in.Tenant, key, IDs, func(id string) (idempotency.Response, error) {
		in.ID, in.Keyed = id, key.Value != nil
		if err := validateNew(in); err != nil {
			return idempotency.Response{}, err
		}
		c, err := s.store.Create(ctx, in)
		if err != nil {
			return idempotency.Response{}, err
		}
		return render(c)
	})
}

// Get returns the tenant's case (NotFound for another tenant's).
func (s *Service) Get(ctx context.Context, tenant, id string) (*Case, error) {
	return s.store.Get(ctx, tenant, id)
}

// History is a page of the case's transitions, newest first: the store reads the entries
// strictly older than the cursor's (one more than limit, to know whether a page follows), so
// a walk lists none twice and skips none while the case keeps moving.
func (s *Service) History(ctx context.Context, tenant, id, cursor string, limit int) (page.Page[Event], error) {
	scope := "case-history\x00" + tenant + "\x00" + id
	before, err := page.Decode(scope, cursor)
	if err == nil {
		err = page.CheckLimit(limit)
	}
	if err != nil {
		return page.Page[Event]{}, err
	}
	events, err := s.store.History(ctx, tenant, id, before, limit+1)
	if err != nil {
		return page.Page[Event]{}, err
	}
	out := page.Page[Event]{Items: events}
	if len(events) > limit {
		out.Items = events[:limit]
		out.NextCursor = page.Encode(scope, events[limit-1].Pos)
	}
	return out, nil
}

// Escalate moves an OPEN or ESCALATED case one level up, up to the maximum (409 beyond).
func (s *Service) Escalate(ctx context.Context, ch Change) (*Case, error) {
	return s.move(ctx, ch, s.store.Escalate)
}

// Assign hands an OPEN or ESCALATED case to a team, and to a person within it when Assignee is
// set (else to the team's queue: the assignment replaces the old one whole); the reason
// defaults to REASSIGNED.
func (s *Service) Assign(ctx context.Context, ch Change) (*Case, error) {
	if err := checkChange(ch, false); err != nil {
		return nil, err
	}
	if !teamPattern.MatchString(ch.AssignedTeam) {
		return nil, apperr.New(apperr.Validation, "assignedTeam must be 1..64 of A-Z a-z 0-9 . _ -")
	}
	if err := checkAssignee(ch.Assignee); err != nil {
		return nil, err
	}
	if ch.Reason == "" {
		ch.Reason = reassigned
	}
	return s.store.Assign(ctx, ch)
}

// Resolve moves an OPEN or ESCALATED case to RESOLVED.
func (s *Service) Resolve(ctx context.Context, ch Change) (*Case, error) {
	return s.move(ctx, ch, s.store.Resolve)
}

// Reopen moves a RESOLVED case back to OPEN.
func (s *Service) Reopen(ctx context.Context, ch Change) (*Case, error) {
	return s.move(ctx, ch, s.store.Reopen)
}

// move runs a transition that needs nothing but a checked change (its reason required): the
// store's transition.
func (s *Service) move(ctx context.Context, ch Change, transition func(context.Context, Change) (*Case, error)) (*Case, error) {
	if err := checkChange(ch, true); err != nil {
		return nil, err
	}
	return transition(ctx, ch)
}
