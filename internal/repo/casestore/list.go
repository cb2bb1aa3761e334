package casestore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/page"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/redis/rueidis"
)

// Listing bounds: a page reads at most listBudget(limit) index members, and prunes at most
// listPruneMax expired cases from the indexes.
const listPruneMax = 64

// listBudget is how many index members one page examines at most: enough for a full page
// when a quarter of the candidates match, bounded so one script stays short.
func listBudget(limit int) int { return max(4*limit, 100) }

// listFields are the fields a page answers per case and filters on: what the decoder reads
// but the last transition's reason, which a list does not show (up to 256 B a case).
var listFields = []string{"schemaVersion", "caseId", "tenantId", "subjectRef", "status", "assignedTeam", "team", "assignee",
	"escalationLevel", "dueAtMs", "stateVersion", "lastTransitionAtMs", "resolvedAtMs",
	"autoEscalatedAtMs", "createdAtMs", "updatedAtMs"}

// List answers one page of q (checked by the service) from the most selective index its
// filters allow, in one script; the other filters are checked on each candidate's hash.
func (r *Store) List(ctx context.Context, q cases.Query) (cases.Page, error) {
	tag := r.TenantTag(q.Tenant)
	filter, value := pickIndex(q)
	pos := slices.Index(indexFilters, filter)*2 + 1
	if q.Order == cases.OrderDue {
		pos++
	}
	vtag := r.indexTag(filter, value)
	scope := r.listScope(q, filter)
	cursor, err := repo.DecodeCursor(q.Cursor, scope, vtag)
	if err != nil {
		return cases.Page{}, err
	}
	level, overdue := "", ""
	if q.Level != nil {
		level = strconv.Itoa(*q.Level)
	}
	if q.Overdue != nil {
		overdue = map[bool]string{true: "1", false: "0"}[*q.Overdue]
	}
	rev := map[bool]string{true: "1", false: ""}[q.Order == cases.OrderUpdated]
	byDue := map[bool]string{true: "1", false: ""}[q.Order == cases.OrderDue]
	args := append([]string{strconv.Itoa(pos), vtag, cursor, rev, strconv.Itoa(q.Limit), strconv.Itoa(listBudget(q.Limit)),
		strconv.Itoa(listPruneMax), r.Keys.Key("case", tag) + ":", q.Tenant, strings.Join(q.Statuses, " "), q.Team, q.Assignee,
		level, q.Subject, overdue, byDue}, listFields...)
	keys := append([]string{r.caseKeys(tag, "")[2]}, r.indexKeys(tag)...)
	var rep repo.Reply
	err = r.writes.Read(ctx, keys[0], func(c rueidis.Client) (err error) {
		rep, err = repo.RunScript(ctx, c, r.Metrics, "case_list", "case list", scriptList, keys, args)
		return err
	})
	if err != nil {
		return cases.Page{}, err
	}
	return r.readPage(ctx, rep, scope)
}

// readPage decodes case_list's reply: the page's cases (a corrupt one is counted, logged and
// left out, never served) and the cursor after the last member examined when there may be more.
func (r *Store) readPage(ctx context.Context, rep repo.Reply, scope string) (cases.Page, error) {
	// {'OK', nowMs, last member, more, {values}...}
	if rep.Code() != repo.CodeOK {
		return cases.Page{}, repo.BadReply(ctx, r.Metrics, "case_list", rep.Unexpected())
	}
	if err := rep.WantAtLeast(3); err != nil {
		return cases.Page{}, repo.BadReply(ctx, r.Metrics, "case_list", err)
	}
	last, err := rep.Str(1)
	more, moreErr := rep.Str(2)
	if err = errors.Join(err, moreErr); err != nil {
		return cases.Page{}, repo.BadReply(ctx, r.Metrics, "case_list", err)
	}
	pg := cases.Page{Items: make([]*cases.Case, 0, rep.Len()-3)}
	for _, v := range rep.Values(3) {
		vals, err := v.ToArray()
		if err != nil {
			return cases.Page{}, repo.BadReply(ctx, r.Metrics, "case_list", err)
		}
		m, _, err := repo.HMGetFields(vals, listFields)
		if err != nil {
			return cases.Page{}, repo.BadReply(ctx, r.Metrics, "case_list", err)
		}
		c, err := r.objects.Decode(ctx, m, m["caseId"])
		if errors.Is(err, repo.ErrCorrupt) {
			continue
		}
		if err != nil {
			return cases.Page{}, err
		}
		pg.Items = append(pg.Items, c)
	}
	if more == "1" {
		pg.NextCursor = page.Encode(scope, last)
	}
	return pg, nil
}

// pickIndex chooses the index a query reads: the filter likely to select fewest cases
// (a person's, a subject's, a team's, a level's, one status), else all cases.
func pickIndex(q cases.Query) (filter, value string) {
	switch {
	case q.Assignee != "":
		return "assignee", q.Assignee
	case q.Subject != "":
		return "subject", q.Subject
	case q.Team != "":
		return "team", q.Team
	case q.Level != nil:
		return "level", strconv.Itoa(*q.Level)
	case len(q.Statuses) == 1:
		return "status", q.Statuses[0]
	}
	return "all", ""
}

// listScope binds a cursor to its query: the order, the index and a keyed hash of every
// filter, so a cursor sent with other filters is refused (400 naming cursor).
func (r *Store) listScope(q cases.Query, filter string) string {
	st := slices.Clone(q.Statuses)
	slices.Sort(st)
	level, overdue := "", ""
	if q.Level != nil {
		level = strconv.Itoa(*q.Level)
	}
	if q.Overdue != nil {
		overdue = strconv.FormatBool(*q.Overdue)
	}
	fp := repo.IndexTag(r.Hasher, "case:query", strings.Join([]string{q.Tenant, strings.Join(st, ","), q.Team, q.Assignee,
		level, q.Subject, overdue}, "\x00"))
	return "cases." + q.Order + "." + filter + "." + fp
}
