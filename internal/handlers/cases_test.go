package handlers

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/cases"
	"github.com/hashgate/hashgate/internal/repo/casestore"
)

type caseJSON struct {
	CaseId               string `json:"caseId"`
	Status               string `json:"status"`
	EscalationLevel      int    `json:"escalationLevel"`
	StateVersion         int64  `json:"stateVersion"`
	AssignedTeam         string `json:"assignedTeam"`
	LastTransitionReason string `json:"lastTransitionReason"`
	ResolvedAt           string `json:"resolvedAt"`
}

func caseBody(due time.Time) map[string]any {
	return map[string]any{"subjectRef": "order/42", "assignedTeam": "ops", "dueAt": due.Format(time.RFC3339), "reason": "late delivery"}
}

func TestCaseHTTPFlow(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "cases:read", "cases:write")
		body := caseBody(time.Now().Add(time.Hour))
		rec := h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", "open-case-0001")
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		if c.Status != "OPEN" || rec.Header().Get("ETag") != `"1"` || rec.Header().Get("Location") != "/v1/cases/"+c.CaseId {
			t.Fatalf("create: %v %s", rec.Header(), rec.Body)
		}
		again := h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", "open-case-0001")
		wantStatus(t, again, 201)
		if !bytes.Equal(again.Body.Bytes(), rec.Body.Bytes()) || again.Header().Get("Idempotent-Replayed") != "true" ||
			again.Header().Get("ETag") != `"1"` || again.Header().Get("Location") != rec.Header().Get("Location") {
			t.Fatalf("replay differs:\n%s\n%s %v", rec.Body, again.Body, again.Header())
		}
		body["reason"] = "something else"
		wantProblem(t, h.do("POST", "/v1/cases", body, "Authorization", auth, "Idempotency-Key", "open-case-0001"), 422, "idempotency-key-reused")

		path := "/v1/cases/" + c.CaseId
		reason := map[string]any{"reason": "customer waiting"}
		for level := 1; level <= 3; level++ {
			rec = h.do("POST", path+"/escalate", reason, "Authorization", auth)
			wantStatus(t, rec, 200)
			decode(t, rec, &c)
			if c.EscalationLevel != level || c.Status != "ESCALATED" || rec.Header().Get("ETag") != fmt.Sprintf(`"%d"`, level+1) {
				t.Fatalf("escalate %d: %s", level, rec.Body)
			}
		}
		wantProblem(t, h.do("POST", path+"/escalate", reason, "Authorization", auth), 409, "max-escalation")
		assign := map[string]any{"assignedTeam": "billing"}
		wantProblem(t, h.do("POST", path+"/assign", assign, "Authorization", auth, "If-Match", `"2"`), 412, "precondition-failed")
		wantProblem(t, h.do("POST", path+"/assign", assign, "Authorization", auth, "If-Match", `4`), 400, "validation")
		rec = h.do("POST", path+"/assign", assign, "Authorization", auth, "If-Match", `"4"`)
		wantStatus(t, rec, 200)
		decode(t, rec, &c)
		if c.AssignedTeam != "billing" {
			t.Fatalf("assign: %s", rec.Body)
		}
		rec = h.do("POST", path+"/resolve", map[string]any{"reason": "refunded"}, "Authorization", auth)
		wantStatus(t, rec, 200)
		decode(t, rec, &c)
		if c.Status != "RESOLVED" || c.ResolvedAt == "" || c.LastTransitionReason != "refunded" {
			t.Fatalf("resolve: %s", rec.Body)
		}
		wantProblem(t, h.do("POST", path+"/escalate", reason, "Authorization", auth), 409, "invalid-status")
		wantProblem(t, h.do("POST", path+"/assign", assign, "Authorization", auth), 409, "invalid-status")
		rec = h.do("POST", path+"/reopen", map[string]any{"reason": "not fixed"}, "Authorization", auth, "If-Match", "*")
		wantStatus(t, rec, 200)
		wantProblem(t, h.do("POST", path+"/reopen", reason, "Authorization", auth), 409, "invalid-status")

		rec = h.do("GET", path+"/history", nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		var hist struct {
			Items []struct {
				Transition   string `json:"transition"`
				ToStatus     string `json:"toStatus"`
				StateVersion int64  `json:"stateVersion"`
				Actor        string `json:"actor"`
			} `json:"items"`
		}
		decode(t, rec, &hist)
		want := []string{"reopen", "resolve", "assign", "escalate", "escalate", "escalate", "create"}
		if len(hist.Items) != len(want) {
			t.Fatalf("history: %s", rec.Body)
		}
		for i, it := range hist.Items {
			if it.Transition != want[i] || it.Actor != "svc-test" {
				t.Fatalf("history[%d] = %+v, want %s", i, it, want[i])
			}
		}
		rec = h.do("GET", path, nil, "Authorization", auth)
		wantStatus(t, rec, 200)
		if rec.Header().Get("ETag") != `"7"` {
			t.Fatalf("GET ETag %q", rec.Header().Get("ETag"))
		}
		stranger := h.bearer("globex", "cases:read", "cases:write")
		wantProblem(t, h.do("GET", path, nil, "Authorization", stranger), 404, "not-found")
		wantProblem(t, h.do("GET", path+"/history", nil, "Authorization", stranger), 404, "not-found")
		wantProblem(t, h.do("POST", path+"/escalate", reason, "Authorization", stranger), 404, "not-found")
		requireKeysHaveTTL(t, h)
	})
}

// TestCaseHTTPConcurrentEscalations: 64 concurrent escalations never pass the maximum.
func TestCaseHTTPConcurrentEscalations(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "cases:read", "cases:write")
		rec := h.do("POST", "/v1/cases", caseBody(time.Now().Add(time.Hour)), "Authorization", auth)
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		codes := make([]int, 64)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				codes[i] = h.do("POST", "/v1/cases/"+c.CaseId+"/escalate", map[string]any{"reason": "storm"}, "Authorization", auth).Code
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, code := range codes {
			count[code]++
		}
		if count[200] != casestore.DefaultMaxEscalation || count[409] != 64-casestore.DefaultMaxEscalation {
			t.Fatalf("status counts %v", count)
		}
		rec = h.do("GET", "/v1/cases/"+c.CaseId, nil, "Authorization", auth)
		decode(t, rec, &c)
		if c.EscalationLevel != casestore.DefaultMaxEscalation {
			t.Fatalf("final level %d", c.EscalationLevel)
		}
	})
}

func TestCaseHTTPBadInput(t *testing.T) {
	t.Parallel()
	eachBackendHarness(t, func(t *testing.T, h *harness) {
		auth := h.bearer("acme", "cases:read", "cases:write")
		rec := h.do("POST", "/v1/cases", caseBody(time.Now().Add(time.Hour)), "Authorization", auth)
		wantStatus(t, rec, 201)
		var c caseJSON
		decode(t, rec, &c)
		path := "/v1/cases/" + c.CaseId
		tests := []struct {
			name, method, path string
			body               any
			headers            []string
			status             int
			slug               string
		}{
			{"malformed dueAt", "POST", "/v1/cases", map[string]any{"subjectRef": "o/1", "assignedTeam": "ops", "dueAt": "tomorrow", "reason": "r"}, nil, 400, "validation"},
			{"dueAt too far", "POST", "/v1/cases", caseBody(time.Now().Add(365 * 24 * time.Hour)), nil, 422, "unprocessable"},
			{"missing reason", "POST", "/v1/cases", map[string]any{"subjectRef": "o/1", "assignedTeam": "ops", "dueAt": time.Now().Format(time.RFC3339)}, nil, 400, "validation"},
			{"bad team", "POST", path + "/assign", map[string]any{"assignedTeam": "a b"}, nil, 400, "validation"},
			{"empty reason", "POST", path + "/escalate", map[string]any{"reason": ""}, nil, 400, "validation"},
			{"wrong content type", "POST", path + "/escalate", "reason=x", []string{"Content-Type", "text/plain"}, 415, "unsupported-media-type"},
			{"malformed ETag", "POST", path + "/escalate", map[string]any{"reason": "x"}, []string{"If-Match", `"1`}, 400, "validation"},
			{"weak ETag", "POST", path + "/escalate", map[string]any{"reason": "x"}, []string{"If-Match", `W/"1"`}, 412, "precondition-failed"},
			{"unknown case", "GET", "/v1/cases/" + cases.NewID(), nil, nil, 404, "not-found"},
			{"unknown case history", "GET", "/v1/cases/" + cases.NewID() + "/history", nil, nil, 404, "not-found"},
			{"bad case id", "GET", "/v1/cases/c_nope", nil, nil, 400, "validation"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rec := h.do(tt.method, tt.path, tt.body, append([]string{"Authorization", auth}, tt.headers...)...)
				wantProblem(t, rec, tt.status, tt.slug)
			})
		}
		rec = h.do("GET", path, nil, "Authorization", auth)
		if rec.Header().Get("ETag") != `"1"` {
			t.Fatalf("refusals changed the case: %s", rec.Body)
		}
	})
}
