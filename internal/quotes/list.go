package quotes

import (
	"context"
	"slices"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
)

// Lists of a tenant's drafts (GET /v1/quotes): newest first by last update, filtered, in cursor
// pages read from the store's indexes.

// Page sizes.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// ListQuery is one page's request. Empty filters match every draft; Statuses matches any of
// its statuses.
type ListQuery struct {
	Tenant       string
	CustomerID   string
	SalesChannel string
	Statuses     []string
	UpdatedSince time.Time // zero: any
	Cursor       string    // the previous page's NextCursor; "" for the first page
	Limit        int
}

// Page is one page of drafts and the cursor of the next ("" on the last page). A page may
// hold fewer than the limit, even none, and still have a next cursor.
type Page struct {
	Items      []Quote
	NextCursor string
}

// List returns one page of the tenant's drafts matching q.
func (s *Service) List(ctx context.Context, q ListQuery) (Page, error) {
	if err := validateList(&q); err != nil {
		return Page{}, err
	}
	return s.store.List(ctx, q)
}

// validateList checks the filters' shapes (the spec's, for a caller that bypasses it) and
// normalizes the statuses: sorted, once each, none when every status is asked for.
func validateList(q *ListQuery) error {
	bad := func(param, detail string) error {
		return &apperr.Error{Kind: apperr.Validation, Detail: "The " + param + " filter " + detail + ".",
			Fields: []apperr.FieldError{{Parameter: "query:" + param, Detail: detail}}}
	}
	switch {
	case q.Limit < 1 || q.Limit > MaxPageLimit:
		return bad("limit", "must be within 1..100")
	case q.CustomerID != "" && !refPattern.MatchString(q.CustomerID):
		return bad("customerId", "must be 1..64 of A-Z a-z 0-9 . _ : -")
	case q.SalesChannel != "" && !channelPattern.MatchString(q.SalesChannel):
		return bad("salesChannel", "must be 1..32 of A-Z a-z 0-9 . _ -")
	}
	for _, s := range q.Statuses {
		if s != Draft && s != Submitted {
			return bad("status", "must be DRAFT or SUBMITTED (several: comma-separated)")
		}
	}
	slices.Sort(q.Statuses)
	q.Statuses = slices.Compact(q.Statuses)
	if len(q.Statuses) == 2 {
		q.Statuses = nil
	}
	return nil
}
