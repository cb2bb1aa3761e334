package handlers

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
)

type casePageJSON struct {
	Items []struct {
		caseJSON
		Assignee string `json:"assignee"`
		DueAt    string `json:"dueAt"`
	} `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// listCases GETs path and follows Link rel="next" to the end: the case ids in order, and the
// number of pages.
func listCases(t *testing.T, h *harness, auth, path string) (ids []string, assignees []string, pages int) {
	t.Helper()
	for path != "" {
		rec := h.do("GET", path, nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		var page casePageJSON
		decode(t, rec, &page)
		for _, c := range page.Items {
			ids = append(ids, c.CaseId)
			assignees = append(assignees, c.Assignee)
		}
		pages++
		link := rec.Header().Get("Link")
		if (link == "") != (page.NextCursor == "") {
			t.Fatalf("Link %q with nextCursor %q", link, page.NextCursor)
		}
		path = ""
		if link != "" {
			target := strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
			u, err := url.Parse(target)
			if err != nil || u.Query().Get("cursor") != page.NextCursor {
				t.Fatalf("Link %q does not carry nextCursor %q", link, page.NextCursor)
			}
			path = target
		}
	}
	return ids, assignees, pages
}

func TestCaseListHTTP(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "cases:read", "cases:write")
		open := func(team string, due time.Duration) string {
			body := caseBody(time.Now().Add(due))
			body["assignedTeam"] = team
			rec := h.do("POST", "/v1/cases", body, "Authorization", auth)
			wantStatus(t, rec, 201)
			var c caseJSON
			decode(t, rec, &c)
			return c.CaseId
		}
		late, soon, later, other := open("ops", -2*time.Hour), open("ops", time.Hour), open("ops", 3*time.Hour), open("billing", -time.Hour)
		// the caller's own: assign two to the token's subject, one to someone else
		for _, a := range [][2]string{{late, testauth.Subject}, {later, testauth.Subject}, {soon, "ana"}} {
			wantStatus(t, h.do("POST", "/v1/cases/"+a[0]+"/assign", map[string]any{"assignedTeam": "ops", "assignee": a[1]}, "Authorization", auth), 200)
			time.Sleep(2 * time.Millisecond) // each write its own updatedAt ms (a tie orders by id)
		}
		wantStatus(t, h.do("POST", "/v1/cases/"+other+"/resolve", map[string]any{"reason": "done"}, "Authorization", auth), 200)

		ids, assignees, _ := listCases(t, h, auth, "/v1/cases?assignee=me&order=due&limit=1")
		if !slices.Equal(ids, []string{late, later}) || assignees[0] != testauth.Subject {
			t.Fatalf("my queue = %v %v, want [late later] (%s %s)", ids, assignees, late, later)
		}
		ids, _, pages := listCases(t, h, auth, "/v1/cases?status=OPEN&status=ESCALATED&order=due&limit=2")
		if !slices.Equal(ids, []string{late, soon, later}) || pages < 2 {
			t.Fatalf("the open queue = %v over %d pages, want [late soon later]", ids, pages)
		}
		ids, _, _ = listCases(t, h, auth, "/v1/cases?overdue=true")
		if !slices.Equal(ids, []string{late}) {
			t.Fatalf("overdue = %v, want [late] (the resolved overdue case is not)", ids)
		}
		ids, _, _ = listCases(t, h, auth, "/v1/cases?order=updated&limit=100")
		if !slices.Equal(ids, []string{other, soon, later, late}) {
			t.Fatalf("newest first = %v", ids)
		}
		ids, _, _ = listCases(t, h, auth, "/v1/cases?assignedTeam=billing&escalationLevel=0&subjectRef=order/42")
		if !slices.Equal(ids, []string{other}) {
			t.Fatalf("billing = %v", ids)
		}
		if ids, _, _ = listCases(t, h, h.bearer("globex", "cases:read"), "/v1/cases"); len(ids) != 0 {
			t.Fatalf("another tenant lists %v", ids)
		}

		p := wantProblem(t, h.do("GET", "/v1/cases?team=ops", nil, "Authorization", auth), 400, "validation")
		if len(p.Errors) != 1 || p.Errors[0].Parameter != "query:team" {
			t.Fatalf("an unknown filter: %+v", p)
		}
		wantProblem(t, h.do("GET", "/v1/cases?status=CLOSED", nil, "Authorization", auth), 400, "validation")
		wantProblem(t, h.do("GET", "/v1/cases?limit=101", nil, "Authorization", auth), 400, "validation")
		wantProblem(t, h.do("GET", "/v1/cases?order=priority", nil, "Authorization", auth), 400, "validation")
		rec := h.do("GET", "/v1/cases?assignedTeam=ops&limit=1", nil, "Authorization", auth)
		var page casePageJSON
		decode(t, rec, &page)
		p = wantProblem(t, h.do("GET", "/v1/cases?assignedTeam=billing&limit=1&cursor="+page.NextCursor, nil, "Authorization", auth), 400, "validation")
		if len(p.Errors) != 1 || p.Errors[0].Parameter != "query:cursor" {
			t.Fatalf("a cursor of another query: %+v", p)
		}
		wantProblem(t, h.do("GET", "/v1/cases", nil, "Authorization", h.bearer("acme", "cases:write")), 403, "insufficient-scope")
	})
}

func TestCaseAssigneeHTTP(t *testing.T) {
	t.Parallel()
	h := embedded(t)
	auth := h.bearer("acme", "cases:read", "cases:write")
	body := caseBody(time.Now().Add(time.Hour))
	body["assignee"] = "ana"
	rec := h.do("POST", "/v1/cases", body, "Authorization", auth)
	wantStatus(t, rec, 201)
	var c struct {
		caseJSON
		Assignee string `json:"assignee"`
	}
	decode(t, rec, &c)
	if c.Assignee != "ana" {
		t.Fatalf("create with an assignee: %s", rec.Body)
	}
	path := "/v1/cases/" + c.CaseId + "/assign"
	wantProblem(t, h.do("POST", path, map[string]any{"assignedTeam": "ops", "assignee": "me"}, "Authorization", auth), 400, "validation")
	wantProblem(t, h.do("POST", path, map[string]any{"assignedTeam": "ops", "assignee": "a b"}, "Authorization", auth), 400, "validation")
	rec = h.do("POST", path, map[string]any{"assignedTeam": "billing"}, "Authorization", auth)
	wantStatus(t, rec, 200)
	c.Assignee = ""
	decode(t, rec, &c)
	if c.Assignee != "" || c.AssignedTeam != "billing" {
		t.Fatalf("another team without an assignee keeps %q: %s", c.Assignee, rec.Body)
	}
	rec = h.do("GET", "/v1/cases/"+c.CaseId+"/history", nil, "Authorization", auth)
	if !strings.Contains(rec.Body.String(), `"assignee":"ana"`) {
		t.Fatalf("the history does not show the first assignee: %s", rec.Body)
	}
}

// A page of 100 cases stays under 64 KiB at the longest values every field accepts: the
// tenant, subject, team, assignee and the last transition's reason.
func TestCaseListPageOf100Size(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testredis.Backends()[0], nil)
	auth := h.bearer(strings.Repeat("t", 128), "cases:read", "cases:write")
	team := strings.Repeat("q", 64)
	body := caseBody(time.Now().Add(time.Hour))
	body["subjectRef"], body["assignedTeam"], body["reason"] = strings.Repeat("s", 128), team, strings.Repeat("r", 256)
	assign := map[string]any{"assignedTeam": team, "assignee": strings.Repeat("a", 128), "reason": strings.Repeat("w", 256)}
	for range 101 {
		rec := h.do("POST", "/v1/cases", body, "Authorization", auth)
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		wantStatus(t, h.do("POST", "/v1/cases/"+c.CaseId+"/assign", assign, "Authorization", auth), 200)
	}
	rec := h.do("GET", "/v1/cases?limit=100&assignedTeam="+team, nil, "Authorization", auth)
	wantStatus(t, rec, 200)
	var p casePageJSON
	decode(t, rec, &p)
	if len(p.Items) != 100 || p.NextCursor == "" || p.Items[0].Assignee == "" {
		t.Fatalf("page of %d, next %q", len(p.Items), p.NextCursor)
	}
	if n := rec.Body.Len(); n >= 64<<10 {
		t.Fatalf("a page of 100 is %d bytes", n)
	}
	t.Logf("a page of 100 cases: %d bytes", rec.Body.Len())
}
