package robustness

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Escalation cases: the state machine of internal/cases (case_transition.lua) — escalate
// OPEN|ESCALATED → ESCALATED one level up to maxEscalation, assign OPEN|ESCALATED (team),
// resolve OPEN|ESCALATED → RESOLVED, reopen RESOLVED → OPEN — each bumping stateVersion by
// one and compared with If-Match when sent; and the sweeper's automatic escalation
// (case_auto_escalate.lua): an OPEN case, due, below the maximum and never auto-escalated
// before, goes to ESCALATED one level up with reason auto_escalate, at most once in its life.
//
// No client sees the sweeper's escalation happen, only its effect, so the model is
// nondeterministic: before any operation that returned after the case's dueAt, the
// escalation may have happened if it was allowed then. Every answer is checked: a read shows
// the state; a transition answered 200 was valid from the state the history implies and shows
// the state it made; 412 only for a stale If-Match; 409 invalid-status / max-escalation only
// when the state refuses the transition.

// maxEscalation is GATEWAY_CASE_MAX_ESCALATION's default, which the runs keep.
const maxEscalation = 3

type caseOp string

const (
	caseRead     caseOp = "read"
	caseEscalate caseOp = "escalate"
	caseAssign   caseOp = "assign"
	caseResolve  caseOp = "resolve"
	caseReopen   caseOp = "reopen"
)

type caseIn struct {
	Op      caseOp
	Case    string
	IfMatch int64  // -1: no If-Match
	Reason  string // a transition's reason, unique in the run
	Team    string // assign
	// MayBeDue: the operation returned after the case's dueAt (Redis time and the test's are
	// one clock here), so the sweeper may have escalated it before the operation took effect.
	MayBeDue bool
}

func (in caseIn) key() string { return "case " + in.Case }
func (in caseIn) reads() bool { return in.Op == caseRead }

// caseView is a case as an answer shows it (or as the model holds it).
type caseView struct {
	Status  string
	Level   int
	Team    string
	Version int64
	Reason  string // lastTransitionReason
}

type caseOut struct {
	Unknown bool
	Code    int    // HTTP status
	Problem string // 409: "invalid-status" or "max-escalation"
	View    caseView
}

type caseState struct {
	caseView
	Auto bool // auto-escalated once already
}

// initialCase is every case as the workload creates it.
var initialCase = caseState{caseView: caseView{Status: "OPEN", Team: "t0", Version: 1, Reason: "created"}}

// autoEscalable reports whether the sweeper may escalate the case now (case_auto_escalate.lua).
func (s caseState) autoEscalable() bool {
	return s.Status == "OPEN" && !s.Auto && s.Level < maxEscalation
}

func (s caseState) autoEscalated() caseState {
	s.Status, s.Level, s.Version, s.Reason, s.Auto = "ESCALATED", s.Level+1, s.Version+1, "auto_escalate", true
	return s
}

// transition is what the gateway answers to in from s: the code, the problem, and the state
// after it.
func (s caseState) transition(in caseIn) (int, string, caseState) {
	active := s.Status == "OPEN" || s.Status == "ESCALATED"
	switch {
	case in.IfMatch >= 0 && in.IfMatch != s.Version:
		return 412, "", s
	case in.Op == caseReopen && s.Status != "RESOLVED", in.Op != caseReopen && !active:
		return 409, "invalid-status", s
	case in.Op == caseEscalate && s.Level >= maxEscalation:
		return 409, "max-escalation", s
	}
	n := s
	n.Version, n.Reason = s.Version+1, in.Reason
	switch in.Op {
	case caseEscalate:
		n.Status, n.Level = "ESCALATED", s.Level+1
	case caseAssign:
		n.Team = in.Team
	case caseResolve:
		n.Status = "RESOLVED"
	case caseReopen:
		n.Status = "OPEN"
	}
	return 200, "", n
}

// step applies one operation to one state: the states it may leave (none: not explainable).
func (s caseState) step(in caseIn, out caseOut) []any {
	if in.Op == caseRead {
		if out.Code == 200 && out.View == s.caseView {
			return []any{s}
		}
		return nil
	}
	code, problem, next := s.transition(in)
	switch {
	case out.Unknown:
		return []any{next} // unchanged when refused; placed last, so also "never happened"
	case out.Code != code || out.Problem != problem:
		return nil
	case code == 200 && out.View != next.caseView:
		return nil
	}
	return []any{next}
}

var caseModel = porcupine.NondeterministicModel{
	Partition: partitionByKey,
	Init:      func() []any { return []any{initialCase} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(caseState), input.(caseIn), output.(caseOut)
		next := s.step(in, out)
		if in.MayBeDue && s.autoEscalable() {
			next = append(next, s.autoEscalated().step(in, out)...)
		}
		return next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(caseIn), output.(caseOut)
		res := "?"
		if !out.Unknown {
			res = fmt.Sprintf("%d %s", out.Code, out.Problem)
			if out.Code == 200 {
				res += " " + out.View.String()
			}
		}
		due := ""
		if in.MayBeDue {
			due = " (due)"
		}
		switch in.Op {
		case caseRead:
			return "read" + due + " → " + res
		case caseAssign:
			return fmt.Sprintf("assign(%s, If-Match %d, %s)%s → %s", in.Team, in.IfMatch, in.Reason, due, res)
		}
		return fmt.Sprintf("%s(If-Match %d, %s)%s → %s", in.Op, in.IfMatch, in.Reason, due, res)
	},
	DescribeState: func(state any) string {
		s := state.(caseState)
		return fmt.Sprintf("%s auto=%v", s.caseView.String(), s.Auto)
	},
}

func (v caseView) String() string {
	return fmt.Sprintf("v%d %s L%d %s %q", v.Version, v.Status, v.Level, v.Team, v.Reason)
}
