package robustness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The models on small hand-written histories (no Redis): each refuses the history that breaks
// its property and accepts its close, legal neighbour, so a run's 0 is the checker's verdict,
// not a model that accepts everything.

// op is an operation from call to ret (ret < 0: the result was never learned).
func op(client int, call, ret int64, in, out any) porcupine.Operation {
	if ret < 0 {
		ret = 1 << 40
	}
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

type knownHistory struct {
	name  string
	model porcupine.Model
	ops   []porcupine.Operation
	legal bool
}

func TestModelsOnKnownHistories(t *testing.T) {
	authorize := func(tok string, initial bool) sessionIn {
		return sessionIn{Op: opAuthorize, Session: "s", Token: tok, Initial: initial}
	}
	revoke := sessionIn{Op: opRevoke, Session: "s", ID: "s", FirstID: true}
	rotate := sessionIn{Op: opRotate, Session: "s", ID: "s", FirstID: true}
	verify := sessionIn{Op: opVerify, Session: "s", ID: "s", FirstID: true}
	// pending is in on a session created with mfaRequired.
	pending := func(in sessionIn) sessionIn { in.LoginMFA = true; return in }
	logout := sessionIn{Op: opLogout, Session: "s", Token: "t0", Initial: true}
	ok, refused, lost := sessionOut{OK: true}, sessionOut{}, sessionOut{Unknown: true}
	patch := func(ifMatch int64, c string) quoteIn {
		return quoteIn{Op: opPatch, Quote: "q", IfMatch: ifMatch, Customer: c}
	}
	read := quoteIn{Op: opRead, Quote: "q"}
	cases := []knownHistory{
		{"session authorized after an acknowledged revoke", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, revoke, ok), op(1, 20, 30, authorize("t0", true), ok)}, false},
		{"session authorized concurrently with a revoke", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, revoke, ok), op(1, 5, 30, authorize("t0", true), ok)}, true},
		{"session revoke whose answer was lost, then authorized", newSessionModel(false), []porcupine.Operation{
			op(0, 0, -1, revoke, lost), op(1, 20, 30, authorize("t0", true), ok)}, true},
		{"old token authorized after an acknowledged rotation", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(1, 20, 30, authorize("t0", true), ok)}, false},
		{"new token authorized after rotation, old refused", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(1, 20, 30, authorize("t1", false), ok),
			op(1, 40, 50, authorize("t0", true), refused)}, true},
		{"revoke by the id before a rotation ends the session only under stable ids", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"}), op(0, 20, 30, revoke, ok),
			op(1, 40, 50, authorize("t1", false), ok)}, false},
		{"old token authorized after an acknowledged step-up verify", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, verify, sessionOut{OK: true, Token: "t1", ID: "s"}), op(1, 20, 30, authorize("t0", true), ok)}, false},
		{"old token authorized during a step-up verify, the new one after", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, verify, sessionOut{OK: true, Token: "t1", ID: "s"}), op(1, 5, 30, authorize("t0", true), ok),
			op(1, 40, 50, authorize("t1", false), ok), op(1, 60, 70, authorize("t0", true), refused)}, true},
		{"a step-up verify answered after the session's revoke was", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, revoke, ok), op(1, 20, 30, verify, sessionOut{OK: true, Token: "t1", ID: "s"})}, false},
		{"a session whose login waits for MFA authorized before its verify", newSessionModel(true), []porcupine.Operation{
			op(1, 0, 10, pending(authorize("t0", true)), ok)}, false},
		{"a session whose login waits for MFA: refused, then its verify's token authorized", newSessionModel(true), []porcupine.Operation{
			op(1, 0, 10, pending(authorize("t0", true)), refused), op(0, 20, 30, pending(verify), sessionOut{OK: true, Token: "t1", ID: "s"}),
			op(1, 40, 50, pending(authorize("t1", false)), ok)}, true},
		{"a session whose login waits for MFA authorized after a rotation, before any verify", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, pending(rotate), sessionOut{OK: true, Token: "t1", ID: "s"}), op(1, 20, 30, pending(authorize("t1", false)), ok)}, false},
		{"a session whose login waits for MFA logged out", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, authorize("t0", true), ok), op(0, 0, 10, pending(logout), ok),
			op(1, 20, 30, pending(authorize("t0", true)), refused)}, true},
		{"a rotation answering another id violates stable ids", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s1"})}, false},
		{"a rotation keeping the id, then a revoke by it, ends the session", newSessionModel(true), []porcupine.Operation{
			op(0, 0, 10, rotate, sessionOut{OK: true, Token: "t1", ID: "s"}), op(0, 20, 30, revoke, ok),
			op(1, 40, 50, authorize("t1", false), refused)}, true},
		// A logout answered 204 is recorded as its authentication and its effect over one interval.
		{"two logouts with one token at once both answered", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, authorize("t0", true), ok), op(0, 0, 10, logout, ok),
			op(1, 1, 11, authorize("t0", true), ok), op(1, 1, 11, logout, ok),
			op(1, 20, 30, authorize("t0", true), refused)}, true},
		{"a logout answered after another logout was", newSessionModel(false), []porcupine.Operation{
			op(0, 0, 10, authorize("t0", true), ok), op(0, 0, 10, logout, ok),
			op(1, 20, 30, authorize("t0", true), ok), op(1, 20, 30, logout, ok)}, false},
		{"two self-revocations of a root at once both answered", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opAuthorize, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 1, 11, tokenIn{Op: opAuthorize, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 1, 11, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true})}, true},
		{"token child authorized after its root's acknowledged revocation", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 0}, tokenOut{OK: true}),
			op(1, 20, 30, tokenIn{Op: opAuthorize, Family: "f", Node: 2}, tokenOut{OK: true})}, false},
		{"token sibling authorized after a child's revocation", tokenModel, []porcupine.Operation{
			op(0, 0, 10, tokenIn{Op: opRevoke, Family: "f", Node: 1}, tokenOut{OK: true}),
			op(1, 20, 30, tokenIn{Op: opAuthorize, Family: "f", Node: 2}, tokenOut{OK: true})}, true},
		{"quote write acknowledged then lost", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 20, 30, read, quoteOut{Status: 200, Version: 1, Customer: "c0"})}, false},
		{"quote compare-and-set: one of two writers at the same version wins", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 0, 10, patch(1, "c2"), quoteOut{Status: 412}),
			op(1, 20, 30, read, quoteOut{Status: 200, Version: 2, Customer: "c1"})}, true},
		{"quote: both writers at the same version win", quoteModel, []porcupine.Operation{
			op(0, 0, 10, patch(1, "c1"), quoteOut{Status: 200, Version: 2, Customer: "c1"}),
			op(1, 0, 10, patch(1, "c2"), quoteOut{Status: 200, Version: 2, Customer: "c2"})}, false},
		{"quote submitted twice", quoteModel, []porcupine.Operation{
			op(0, 0, 10, quoteIn{Op: opSubmit, Quote: "q", IfMatch: 1}, quoteOut{Status: 200, Version: 2, Customer: "c0", Submitted: true}),
			op(1, 20, 30, quoteIn{Op: opSubmit, Quote: "q", IfMatch: 2}, quoteOut{Status: 200, Version: 3, Customer: "c0", Submitted: true})}, false},
	}
	cases = append(cases, caseHistories()...)
	cases = append(cases, createHistories()...)
	cases = append(cases, evictHistories()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(c.model, c.ops); got != c.legal {
				t.Errorf("linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}

// caseHistories: a lost transition, a second automatic escalation, one before the case was
// due, a transition from a status that refuses it, and the sweeper winning a race with a
// client's escalation.
func caseHistories() []knownHistory {
	m := caseModel.ToModel()
	read := func(due bool) caseIn { return caseIn{Op: caseRead, Case: "c", IfMatch: -1, MayBeDue: due} }
	tr := func(op caseOp, ifMatch int64, reason string, due bool) caseIn {
		return caseIn{Op: op, Case: "c", IfMatch: ifMatch, Reason: reason, MayBeDue: due}
	}
	ok := func(status string, level int, version int64, reason string) caseOut {
		return caseOut{Code: 200, View: caseView{Status: status, Level: level, Team: "t0", Version: version, Reason: reason}}
	}
	auto := ok("ESCALATED", 1, 2, "auto_escalate")
	reopened := []porcupine.Operation{
		op(0, 0, 10, read(true), auto),
		op(0, 20, 30, tr(caseResolve, 2, "r1", true), ok("RESOLVED", 1, 3, "r1")),
		op(0, 40, 50, tr(caseReopen, 3, "r2", true), ok("OPEN", 1, 4, "r2")),
	}
	return []knownHistory{
		{"case transition acknowledged then lost", m, []porcupine.Operation{
			op(0, 0, 10, tr(caseEscalate, 1, "r1", false), ok("ESCALATED", 1, 2, "r1")),
			op(1, 20, 30, read(false), ok("OPEN", 0, 1, "created"))}, false},
		{"case escalated automatically twice", m, append(reopened[:3:3],
			op(1, 60, 70, read(true), ok("ESCALATED", 2, 5, "auto_escalate"))), false},
		{"case reopened after its automatic escalation stays open", m, append(reopened[:3:3],
			op(1, 60, 70, read(true), ok("OPEN", 1, 4, "r2"))), true},
		{"case escalated automatically before it was due", m, []porcupine.Operation{op(0, 0, 10, read(false), auto)}, false},
		{"case reopened while open", m, []porcupine.Operation{
			op(0, 0, 10, tr(caseReopen, 1, "r1", false), ok("OPEN", 0, 2, "r1"))}, false},
		{"case reopen refused while open", m, []porcupine.Operation{
			op(0, 0, 10, tr(caseReopen, 1, "r1", false), caseOut{Code: 409, Problem: "invalid-status"})}, true},
		{"case escalation stale after the sweeper's", m, []porcupine.Operation{
			op(0, 0, 10, tr(caseEscalate, 1, "r1", true), caseOut{Code: 412}),
			op(1, 20, 30, read(true), auto)}, true},
		{"case escalation stale with no other write", m, []porcupine.Operation{
			op(0, 0, 10, tr(caseEscalate, 1, "r1", false), caseOut{Code: 412}),
			op(1, 20, 30, read(false), ok("OPEN", 0, 1, "created"))}, false},
	}
}

// createHistories: two objects for one Idempotency-Key, and an acknowledged create lost.
func createHistories() []knownHistory {
	create := idemIn{Op: idemCreate, Key: "k"}
	return []knownHistory{
		{"one key answered with two objects", idemModel, []porcupine.Operation{
			op(0, 0, 10, create, idemOut{Code: 201, ID: "c_1"}), op(1, 5, 15, create, idemOut{Code: 201, ID: "c_2"})}, false},
		{"one key answered with one object, twice, and in flight", idemModel, []porcupine.Operation{
			op(0, 0, 10, create, idemOut{Code: 201, ID: "c_1"}), op(1, 5, 15, create, idemOut{Code: 201, ID: "c_1"}),
			op(2, 5, 8, create, idemOut{Code: 409})}, true},
		{"keyed create acknowledged, then its object not found", idemModel, []porcupine.Operation{
			op(0, 0, 10, create, idemOut{Code: 201, ID: "c_1"}), op(1, 20, 30, idemIn{Op: idemRead, Key: "k", ID: "c_1"}, idemOut{Code: 404})}, false},
		{"keyed create whose answer was lost, then found", idemModel, []porcupine.Operation{
			op(0, 0, -1, create, idemOut{Unknown: true}), op(1, 20, 30, idemIn{Op: idemRead, Key: "k", ID: "c_1"}, idemOut{Code: 200})}, true},
	}
}

// TestRateLimitCheck: the window check counts only the admissions certainly inside a whole
// window and refuses one over limit × (1 + ε), for each limit over the requests it counts
// (a session's requests over its limit fail the session's check, not the tenant's).
func TestRateLimitCheck(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	run := func(p limitPolicy, admitted int, disturbed bool) result {
		l := &limiterRun{gws: make([]*gateway, 2)}
		for w := range 3 { // windows 0..2: only window 1 is whole
			for i := range admitted {
				call := base.Add(time.Duration(w)*time.Second + time.Duration(i)*time.Millisecond)
				l.ops = append(l.ops, limitedOp{policy: p, call: call, ret: call.Add(time.Millisecond), admitted: true})
			}
		}
		var spans [][2]time.Time
		if disturbed {
			spans = append(spans, [2]time.Time{base.Add(1500 * time.Millisecond), base.Add(1600 * time.Millisecond)})
		}
		rs := l.check(result{}, spans)
		if len(rs) != 1 || rs[0].Model != p.model {
			t.Fatalf("%s: results %+v; want one, of %s", p.model, rs, p.model)
		}
		return rs[0]
	}
	for _, p := range []limitPolicy{perTenant, perToken, perSession} {
		for _, c := range []struct {
			admitted   int
			disturbed  bool
			violations int
		}{{p.limit, false, 0}, {p.limit * 11 / 10, false, 0}, {p.limit * 12 / 10, false, 1}, {p.limit * 25 / 10, true, 0}, {p.limit*3 + 1, true, 1}} {
			r := run(p, c.admitted, c.disturbed)
			if r.Objects != 1 || r.Violations != c.violations {
				t.Errorf("%s: %d admitted (disturbed %v): %d windows, %d violations; want 1, %d", p.model, c.admitted, c.disturbed, r.Objects, r.Violations, c.violations)
			}
			// A window a fault excused is counted in the notes, never passed silently.
			excused := 0
			if c.disturbed && c.violations == 0 && c.admitted > p.limit*11/10 {
				excused = 1
			}
			if want := fmt.Sprintf("%d of them over the quiet bound", excused); !strings.Contains(strings.Join(r.Notes, "; "), want) {
				t.Errorf("%s: %d admitted (disturbed %v): notes %q lack %q", p.model, c.admitted, c.disturbed, r.Notes, want)
			}
		}
	}
	// Each limit is checked over its own requests only: a token over its limit beside a tenant
	// within its own fails the token's check alone.
	l := &limiterRun{gws: make([]*gateway, 2)}
	for w := range 3 {
		for i, n := range []int{rateLimit, tokenLimit * 13 / 10} {
			p := []limitPolicy{perTenant, perToken}[i]
			for j := range n {
				call := base.Add(time.Duration(w)*time.Second + time.Duration(j)*time.Millisecond)
				l.ops = append(l.ops, limitedOp{policy: p, call: call, ret: call.Add(time.Millisecond), admitted: true})
			}
		}
	}
	rs := l.check(result{}, nil)
	if len(rs) != 2 || rs[0].Model != perTenant.model || rs[0].Violations != 0 || rs[1].Model != perToken.model || rs[1].Violations != 1 {
		t.Errorf("a token over its limit beside a tenant within its own: %+v; want the tenant's 0 violations, the token's 1", rs)
	}
}

// TestLostLeavesOutCutReads: the lost count separates a lost acknowledged write from a read of
// an unconfirmed one. A patch answered 503 at the cut, read during the cut and gone after the
// failover is a violation and not a loss; a patch answered 200 before the cut and gone after
// the failover is both; without the cut (a crash run) the first is a loss too.
func TestLostLeavesOutCutReads(t *testing.T) {
	start := time.Unix(0, 0)
	cuts := [][2]time.Time{{start.Add(150), start.Add(500)}}
	patch := quoteIn{Op: opPatch, Quote: "q", IfMatch: initialQuote.Version, Customer: "c1"}
	read := quoteIn{Op: opRead, Quote: "q"}
	before := quoteOut{Status: 200, Version: initialQuote.Version, Customer: initialQuote.Customer}
	after := quoteOut{Status: 200, Version: initialQuote.Version + 1, Customer: "c1"}
	for _, tc := range []struct {
		name      string
		ops       []porcupine.Operation
		cuts      [][2]time.Time
		violation bool
		lost      bool
	}{
		{"an unconfirmed patch read during the cut, then undone", []porcupine.Operation{
			op(0, 140, -1, patch, quoteOut{Unknown: true}), op(1, 200, 210, read, after), op(1, 600, 610, read, before)}, cuts, true, false},
		{"an acknowledged patch undone", []porcupine.Operation{
			op(0, 100, 110, patch, after), op(1, 200, 210, read, after), op(1, 600, 610, read, before)}, cuts, true, true},
		{"an unconfirmed patch read, then undone, with no cut", []porcupine.Operation{
			op(0, 140, -1, patch, quoteOut{Unknown: true}), op(1, 200, 210, read, after), op(1, 600, 610, read, before)}, nil, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			violation := !porcupine.CheckOperations(quoteModel, tc.ops)
			lost := !porcupine.CheckOperations(quoteModel, withoutCutReads(tc.ops, start, tc.cuts))
			if violation != tc.violation || lost != tc.lost {
				t.Errorf("violation %v, lost %v; want %v, %v", violation, lost, tc.violation, tc.lost)
			}
		})
	}
}

// TestRateLimitQuietBoundFollowsRoundTrip: a quiet window's bound is the limiter's design
// evaluated at the round trips probed around it. 46 admissions of a 40/s limit (1.15 ×) fail
// with fast round trips and pass when a 100 ms round trip let the other replica admit 16 in the
// 300 ms the design allows; 2 × the limit (replicas that never share counts) fails either way.
func TestRateLimitQuietBoundFollowsRoundTrip(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	window := func(admitted int, rtt time.Duration) result {
		l := &limiterRun{gws: make([]*gateway, 2)}
		for w := range 3 { // only window 1 is whole
			start := base.Add(time.Duration(w) * time.Second)
			for i := range admitted {
				// Replica 1 admits in bursts of 8 within 70 ms, one every 150 ms; replica 0
				// spreads its share over the window.
				call := start.Add(time.Duration(i/2) * time.Second / time.Duration(admitted/2+1))
				if i%2 == 1 {
					call = start.Add(time.Duration(i/16)*150*time.Millisecond + time.Duration(i%16/2)*10*time.Millisecond)
				}
				l.ops = append(l.ops, limitedOp{policy: perToken, replica: i % 2, call: call, ret: call.Add(time.Millisecond), admitted: true})
			}
			for at := start; at.Before(start.Add(time.Second)); at = at.Add(probeEvery) {
				l.probes = append(l.probes, roundTrip{at, time.Millisecond})
			}
			l.probes = append(l.probes, roundTrip{start.Add(500 * time.Millisecond), rtt})
		}
		rs := l.check(result{}, nil)
		if len(rs) != 1 {
			t.Fatalf("results %+v; want one", rs)
		}
		return rs[0]
	}
	for _, c := range []struct {
		admitted   int
		rtt        time.Duration
		violations int
	}{{46, time.Millisecond, 1}, {46, 100 * time.Millisecond, 0}, {80, time.Millisecond, 1}, {80, 100 * time.Millisecond, 1}} {
		r := window(c.admitted, c.rtt)
		if r.Objects != 1 || r.Violations != c.violations {
			t.Errorf("%d admitted, round trip %v: %d windows, %d violations; want 1, %d (notes %q)", c.admitted, c.rtt, r.Objects, r.Violations, c.violations, r.Notes)
		}
	}
}
