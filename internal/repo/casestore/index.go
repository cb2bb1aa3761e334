package casestore

import (
	"strconv"
	"strings"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo"
)

// A tenant's case list indexes (case_index.lua keeps them, case_list.lua reads them; keys in
// docs/KEYS.md, "List indexes"): for each filter, one index by updatedAt and one by dueAt, so
// every filter reads in either order. Their members are `<valueTag>|<orderMs>|<caseId>`
// (index_member in object_index.lua); the coordinates hash `where` names each case's members.

// indexFilters are the filters in the scripts' KEYS order; "all" is every case (no value tag).
var indexFilters = []string{"all", "status", "team", "assignee", "level", "subject"}

// indexOrders are the two orders of each filter, in the scripts' KEYS order.
var indexOrders = []string{cases.OrderUpdated, cases.OrderDue}

// indexNames are the index keys' last parts (`statusdue`: lowercase letters only, as the
// keyspace audit reads them), in the scripts' KEYS order.
var indexNames = func() []string {
	var out []string
	for _, f := range indexFilters {
		for _, o := range indexOrders {
			out = append(out, f+o)
		}
	}
	return out
}()

// indexKeys are the tenant's list keys as the scripts take them: the coordinates hash, then
// the indexes.
func (r *Store) indexKeys(tenantTag string) []string {
	return r.Keys.IndexKeys("caseidx", tenantTag, indexNames...)
}

// indexTag is value's tag in filter's indexes.
func (r *Store) indexTag(filter, value string) string {
	if value == "" {
		return ""
	}
	return repo.IndexTag(r.Hasher, "case:"+filter, value)
}

// indexTags are the tag tables a script moving a case needs: the statuses' tags
// ('OPEN ESCALATED RESOLVED') and the levels' 0..max, space-separated (a gateway's constants).
func (r *Store) indexTagTables() (statuses, levels string) {
	st := []string{r.indexTag("status", cases.Open), r.indexTag("status", cases.Escalated), r.indexTag("status", cases.Resolved)}
	lv := make([]string, 0, r.maxEscalation+1)
	for l := 0; l <= r.maxEscalation; l++ {
		lv = append(lv, r.indexTag("level", strconv.Itoa(l)))
	}
	return strings.Join(st, " "), strings.Join(lv, " ")
}
