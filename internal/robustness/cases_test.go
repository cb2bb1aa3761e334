package robustness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The cases workload: clients move cases through their transitions (If-Match the last version
// seen, stale or absent now and then) and read them while every replica's sweeper escalates the
// overdue ones (GATEWAY_CASE_SWEEP_INTERVAL=sweepInterval). Watched cases are only read: once
// the run is over, each must have been escalated automatically exactly once (watchAuto).

const (
	workCases    = 10
	watchedCases = 6
)

// clientCase is a case as the clients know it: its dueAt and the last version and status
// answered.
type clientCase struct {
	id      string
	due     time.Time
	watched bool // only read; its automatic escalation is counted after the run
	mu      sync.Mutex
	version int64
	status  string
}

// setupCases creates the workload's cases through g: dueAt spread over the run, so the
// sweepers escalate them while the clients work, and the watched ones due within its first
// half.
func (w *world) setupCases(g *gateway, run time.Duration) error {
	now := time.Now()
	for i := range workCases {
		if err := w.createCase(g, now.Add(time.Second+run*time.Duration(i)/workCases), false); err != nil {
			return err
		}
	}
	for i := range watchedCases {
		if err := w.createCase(g, now.Add(time.Second+run/2*time.Duration(i)/watchedCases), true); err != nil {
			return err
		}
	}
	return nil
}

// createCase opens a case (initialCase) due at due.
func (w *world) createCase(g *gateway, due time.Time, watched bool) error {
	r := g.do("POST", "/v1/cases", map[string]any{"subjectRef": fmt.Sprintf("subject-%d", w.seq.Add(1)), "assignedTeam": initialCase.Team,
		"dueAt": due.UTC().Format(time.RFC3339Nano), "reason": initialCase.Reason}, "Authorization", w.admin)
	var v caseJSON
	if r.status != http.StatusCreated || r.decode(&v) != nil || v.view() != initialCase.caseView {
		return fmt.Errorf("create case: %d %s", r.status, r.body)
	}
	c := &clientCase{id: v.CaseID, due: due, watched: watched, version: v.StateVersion, status: v.Status}
	w.mu.Lock()
	w.cases = append(w.cases, c)
	w.mu.Unlock()
	return nil
}

// caseJSON is the API's Case, as far as the model reads it.
type caseJSON struct {
	CaseID               string `json:"caseId"`
	Status               string `json:"status"`
	AssignedTeam         string `json:"assignedTeam"`
	EscalationLevel      int    `json:"escalationLevel"`
	StateVersion         int64  `json:"stateVersion"`
	LastTransitionReason string `json:"lastTransitionReason"`
}

func (v caseJSON) view() caseView {
	return caseView{Status: v.Status, Level: v.EscalationLevel, Team: v.AssignedTeam, Version: v.StateVersion, Reason: v.LastTransitionReason}
}

// caseStep sends one case operation.
func (w *world) caseStep(c int, rng *rand.Rand, g *gateway) {
	if rng.IntN(100) == 0 {
		_ = w.createCase(g, time.Now().Add(time.Duration(300+rng.IntN(3000))*time.Millisecond), false)
	}
	w.mu.Lock()
	cc := w.cases[rng.IntN(len(w.cases))]
	w.mu.Unlock()
	cc.mu.Lock()
	version, status := cc.version, cc.status
	cc.mu.Unlock()
	in := caseIn{Case: cc.id, IfMatch: -1, Op: caseRead}
	if !cc.watched && w.writable(in.key()) && rng.IntN(10) < 6 {
		in.Op = pickTransition(rng, status)
		in.Reason = "r" + strconv.FormatInt(w.seq.Add(1), 10)
		switch p := rng.IntN(20); {
		case p < 12:
			in.IfMatch = version
		case p < 15:
			in.IfMatch = version - 1 - int64(rng.IntN(2))
		}
		if in.Op == caseAssign {
			in.Team = "team" + strconv.Itoa(rng.IntN(5))
		}
	}
	call := time.Now()
	var r reply
	if in.Op == caseRead {
		r = g.do("GET", "/v1/cases/"+cc.id, nil, "Authorization", w.admin)
	} else {
		body := map[string]any{"reason": in.Reason}
		if in.Op == caseAssign {
			body["assignedTeam"] = in.Team
		}
		headers := []string{"Authorization", w.admin}
		if in.IfMatch >= 0 {
			headers = append(headers, "If-Match", `"`+strconv.FormatInt(in.IfMatch, 10)+`"`)
		}
		r = g.do("POST", "/v1/cases/"+cc.id+"/"+string(in.Op), body, headers...)
	}
	ret := time.Now()
	in.MayBeDue = ret.After(cc.due.Add(-10 * time.Millisecond))
	out := caseOut{Unknown: unknown(r.status), Code: r.status}
	if out.Unknown {
		if in.Op == caseRead {
			return
		}
		out.Code = 0
	}
	switch r.status {
	case http.StatusOK:
		var v caseJSON
		if r.decode(&v) != nil {
			out.Code = -1 // a 200 the model cannot explain
		}
		out.View = v.view()
		cc.mu.Lock()
		cc.version, cc.status = v.StateVersion, v.Status
		cc.mu.Unlock()
	case http.StatusConflict:
		out.Problem = problemSlug(r)
	}
	w.record("cases", c, in, out, call, ret, out.Unknown)
}

// pickTransition mostly picks a transition the status last seen allows, and now and then any.
func pickTransition(rng *rand.Rand, status string) caseOp {
	all := []caseOp{caseEscalate, caseAssign, caseResolve, caseReopen}
	if rng.IntN(5) == 0 {
		return all[rng.IntN(len(all))]
	}
	if status == "RESOLVED" {
		return caseReopen
	}
	return all[rng.IntN(3)]
}

// problemSlug is the last segment of a problem's type URI ("invalid-status").
func problemSlug(r reply) string {
	var p struct{ Type string }
	if r.decode(&p) != nil {
		return "?"
	}
	return p.Type[strings.LastIndexByte(p.Type, '/')+1:]
}

// watchAuto checks, after the run, that every watched case (due during the run, only read)
// was escalated automatically exactly once however many sweepers raced: its history holds
// one auto_escalate entry. It waits until the last is due and a few sweeps have passed, and
// asks again for a while about a case not escalated yet: a failover that ended just before
// (the Sentinel runs' rejoin comes after the workload) leaves the sweepers a few sweeps to do.
// The result is a row: operations = watched cases, violations = cases escalated automatically
// not exactly once.
func (w *world) watchAuto(r result) (result, error) {
	var watched []*clientCase
	var last time.Time
	for _, c := range w.cases {
		if c.watched {
			watched = append(watched, c)
			last = maxTime(last, c.due)
		}
	}
	time.Sleep(time.Until(last.Add(5 * sweepInterval)))
	r.Model, r.Ops, r.Objects = "cases-auto-once", len(watched), len(watched)
	for _, c := range watched {
		n, err := w.autoEscalations(c.id)
		for deadline := time.Now().Add(5 * time.Second); err == nil && n == 0 && time.Now().Before(deadline); {
			time.Sleep(sweepInterval)
			n, err = w.autoEscalations(c.id)
		}
		if err != nil {
			return r, err
		}
		if n != 1 {
			r.Violations++
			r.Notes = append(r.Notes, fmt.Sprintf("case %s (due %s): %d automatic escalations", c.id, c.due.Format(time.RFC3339Nano), n))
		}
	}
	return r, nil
}

// autoEscalations counts the auto_escalate entries of a case's history, asking each live
// replica in turn until one answers. A read is confirmed by a replica (GATEWAY_DURABLE_READS),
// so it answers 503 until the deployment has healed from the last fault: up to 30 s.
func (w *world) autoEscalations(id string) (int, error) {
	var last reply
	end := time.Now().Add(30 * time.Second)
	for try := 0; try == 0 || time.Now().Before(end); try++ {
		g := w.gws[try%len(w.gws)]
		if g.dead.Load() {
			continue
		}
		last = g.do("GET", "/v1/cases/"+id+"/history", nil, "Authorization", w.admin)
		if last.status != http.StatusOK {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		var h struct{ Items []struct{ Transition string } }
		if err := last.decode(&h); err != nil {
			return 0, err
		}
		n := 0
		for _, e := range h.Items {
			if e.Transition == "auto_escalate" {
				n++
			}
		}
		return n, nil
	}
	return 0, errors.New("case history: " + strconv.Itoa(last.status) + " " + string(last.body))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
