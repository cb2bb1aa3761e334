package cases

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
)

// The orders of a case list.
const (
	OrderUpdated = "updated" // the most recently changed case first
	OrderDue     = "due"     // the queue: the earliest dueAt first
)

// List bounds.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
	// MaxListLevel bounds the escalationLevel filter (the store's maximum level is at most 100).
	MaxListLevel = 100
)

// Query is one page's request: every filter set is ANDed; Statuses matches any of them.
type Query struct {
	Tenant   string
	Statuses []string
	Team     string
	Assignee string
	Level    *int
	// Overdue: true lists only cases due before now and not RESOLVED, false only the others.
	Overdue *bool
	Subject string
	Order   string // OrderUpdated (default) or OrderDue
	Limit   int    // 1..MaxPageSize; 0 = DefaultPageSize
	Cursor  string // the previous page's NextCursor; "" = the first page
}

// Page is one page of a list: NextCursor is empty on the last page, and may be set on a short
// (even empty) page, the store having read its scan budget. Its cases are summaries: every
// field but LastTransitionReason (Get and History have it).
type Page struct {
	Items      []*Case
	NextCursor string
}

// checkQuery checks a list request's values (the spec's rules, for callers other than HTTP)
// and fills the defaults.
func checkQuery(q *Query) error {
	if q.Order == "" {
		q.Order = OrderUpdated
	}
	if q.Limit == 0 {
		q.Limit = DefaultPageSize
	}
	seen := map[string]bool{}
	for _, st := range q.Statuses {
		if (st != Open && st != Escalated && st != Resolved) || seen[st] {
			return apperr.New(apperr.Validation, "status must be OPEN, ESCALATED or RESOLVED, each at most once.")
		}
		seen[st] = true
	}
	switch {
	case q.Tenant == "":
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case q.Order != OrderUpdated && q.Order != OrderDue:
		return apperr.New(apperr.Validation, "order must be updated or due.")
	case q.Limit < 1 || q.Limit > MaxPageSize:
		return apperr.Newf(apperr.Validation, "limit must be 1..%d.", MaxPageSize)
	case q.Team != "" && !teamPattern.MatchString(q.Team):
		return apperr.New(apperr.Validation, "assignedTeam must be 1..64 of A-Z a-z 0-9 . _ -")
	case q.Assignee != "" && !assigneePattern.MatchString(q.Assignee):
		return apperr.New(apperr.Validation, "assignee must be 1..128 of A-Z a-z 0-9 . _ @ : + -")
	case q.Subject != "" && !subjectPattern.MatchString(q.Subject):
		return apperr.New(apperr.Validation, "subjectRef must be 1..128 of A-Z a-z 0-9 . _ : / # -")
	case q.Level != nil && (*q.Level < 0 || *q.Level > MaxListLevel):
		return apperr.Newf(apperr.Validation, "escalationLevel must be 0..%d.", MaxListLevel)
	}
	return nil
}

// Overdue reports whether c is overdue at now: due (at or before now, as the sweeper judges)
// and not RESOLVED; what the overdue filter lists.
func (c *Case) Overdue(now time.Time) bool {
	return c.Status != Resolved && !c.DueAt.After(now)
}

// List answers one page of the tenant's cases.
func (s *Service) List(ctx context.Context, q Query) (Page, error) {
	if err := checkQuery(&q); err != nil {
		return Page{}, err
	}
	return s.store.List(ctx, q)
}
