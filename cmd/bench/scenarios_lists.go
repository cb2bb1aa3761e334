package main

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/hashgate/hashgate/client"
)

// case-list: a team's queue read page by page.
const (
	listCases    = 10_000 // the team's cases
	listPageSize = 50
	listTeam     = "bench-queue" // a team of its own: no other row's cases are in its index
)

// caseList opens listCases cases of one team, walks its queue (GET /v1/cases?assignedTeam=…
// &order=due&limit=50) once through the API to collect each page's cursor, and requests every
// page, in order, again and again: each request is one page of 50 out of 10,000.
func (f *fixtures) caseList(ctx context.Context) (wrkScript, wrkScript, error) {
	n := cmp.Or(f.caseListN, listCases)
	if _, err := f.createCases(ctx, n, listTeam); err != nil {
		return wrkScript{}, wrkScript{}, err
	}
	base := "/v1/cases?assignedTeam=" + listTeam + "&order=due&limit=" + strconv.Itoa(listPageSize)
	items := []wrkItem{{Path: base}}
	cursor, listed := "", 0
	for {
		rsp, err := f.api.cl.ListCasesWithResponse(ctx, caseQueueParams(cursor))
		if err != nil {
			return wrkScript{}, wrkScript{}, fmt.Errorf("GET /v1/cases: %w", err)
		}
		if rsp.JSON200 == nil {
			return wrkScript{}, wrkScript{}, fmt.Errorf("GET /v1/cases: %s", rsp.Status())
		}
		listed += len(rsp.JSON200.Items)
		if rsp.JSON200.NextCursor == nil {
			break
		}
		cursor = *rsp.JSON200.NextCursor
		items = append(items, wrkItem{Path: base + "&cursor=" + url.QueryEscape(cursor)})
	}
	if listed != n {
		return wrkScript{}, wrkScript{}, fmt.Errorf("GET /v1/cases: the walk listed %d cases of %d", listed, n)
	}
	return same(wrkScript{Method: "GET", Headers: map[string]string{"Authorization": "Bearer " + f.api.token}, Items: items, Tally: true})
}

func caseQueueParams(cursor string) *client.ListCasesParams {
	team, order, limit := listTeam, client.ListCasesParamsOrderDue, listPageSize
	p := &client.ListCasesParams{AssignedTeam: &team, Order: &order, Limit: &limit}
	if cursor != "" {
		p.Cursor = &cursor
	}
	return p
}
