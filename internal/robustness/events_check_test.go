package robustness

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The events check (issue 26, "atomicity under faults"): after a run, the tenant's events and
// the objects' state are compared both ways. Every change the objects show has exactly one
// event, and every event names a change the objects show; every write the client saw
// acknowledged shows in both. A write whose answer was lost (a kill, a failover, a 503) may go
// either way, but both ways at once: that is what the state-against-events half checks.
// An acknowledged write that is in neither (the change lost with its event, as a failover that
// loses unreplicated writes would do) is counted apart as lost: a durability question, not an
// atomicity one; with the default durability it must be 0 too.

// evOutcome is what the client learned of a write.
type evOutcome int

const (
	evAcked   evOutcome = iota // 2xx
	evRefused                  // 4xx but 429: no change, no event
	evUnknown                  // no answer, a 5xx or a 429: either way
)

// evOp is one write as the client recorded it.
type evOp struct {
	Domain  string // token, quote, case, session
	Kind    string // token: issue, revoke; quote: create, patch, item, submit, delete; case: create, escalate, assign, resolve, reopen; session: create, rotate, revoke, logout
	ID      string // the object (a create's: from its answer, "" when unknown)
	Result  evOutcome
	Version int64 // an acknowledged quote or case write: the stateVersion its answer showed
	Status  int   // the HTTP status (0: no answer)
	// Call, Return: when it was sent and answered (the test's clock, Redis's too: one host).
	Call, Return time.Time
}

// evEvent is one event as GET /v1/events answers it (the fields the check reads).
type evEvent struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Subject string         `json:"subject"`
	Actor   string         `json:"actor"`
	Time    time.Time      `json:"time"`
	Data    map[string]any `json:"data"`
}

// evState is the objects after the run: the tenant's tokens (GET /v1/tokens), every quote
// and case hash in Redis with the case's history (GET /v1/cases/{id}/history), and every
// session the clients, the events or the users' device lists name, live or not
// (GET /v1/sessions/{id}).
type evState struct {
	Tokens   map[string]evToken
	Quotes   map[string]evObject
	Cases    map[string]evCase
	Sessions map[string]evSession
}

type evToken struct{ Revoked bool }

type evObject struct {
	Status  string
	Version int64
}

type evCase struct {
	evObject
	// History: the transitions (GET /v1/cases/{id}/history), oldest first; trimmed to the last
	// GATEWAY_CASE_HISTORY_MAX, so the create entry may be gone.
	History []evTransition
}

type evTransition struct {
	Transition string
	Version    int64
}

type evSession struct {
	Live bool
	// LastRotated: a live session's last rotation (lastRotatedAt; zero when it is createdAt,
	// never rotated).
	LastRotated time.Time
}

// evReport is what the check found.
type evReport struct {
	Writes, Acked, Refused, Unknown int
	Statuses                        map[int]int // writes by HTTP status (0: no answer)
	Events                          int
	ByType                          map[string]int
	Objects                         map[string]int // per domain
	Mismatches                      []string       // a change without its event, an event without its change, a duplicate
	Lost                            []string       // acknowledged, and neither the change nor its event is there
	// Unconfirmed: of Lost, the creates the gateway acknowledges without a replica's WAIT by
	// design (a token's issue, a session's create: docs/ROBUSTNESS.md), which a failover after
	// a partition loses: the credential then stops working, nothing unsafe.
	Unconfirmed int
}

func (r *evReport) mismatch(format string, args ...any) {
	r.Mismatches = append(r.Mismatches, fmt.Sprintf(format, args...))
}

func (r *evReport) lost(format string, args ...any) {
	r.Lost = append(r.Lost, fmt.Sprintf(format, args...))
}

// unconfirmedLost records a lost create the gateway does not confirm (Unconfirmed).
func (r *evReport) unconfirmedLost(format string, args ...any) {
	r.lost(format, args...)
	r.Unconfirmed++
}

// evBySubject is the events of one subject, by type.
type evBySubject map[string][]evEvent

func (b evBySubject) n(types ...string) int {
	c := 0
	for _, t := range types {
		c += len(b[t])
	}
	return c
}

// checkEvents compares ops, events and state (see above).
func checkEvents(ops []evOp, events []evEvent, st evState) evReport {
	r := evReport{Events: len(events), ByType: map[string]int{}, Objects: map[string]int{}, Statuses: map[int]int{}}
	subj := map[string]map[string]evBySubject{} // domain → subject → type → events
	seen := map[string]bool{}
	for _, e := range events {
		if seen[e.ID] {
			r.mismatch("event %s listed twice", e.ID)
		}
		seen[e.ID] = true
		r.ByType[e.Type]++
		domain, _, _ := strings.Cut(e.Type, ".")
		if subj[domain] == nil {
			subj[domain] = map[string]evBySubject{}
		}
		if subj[domain][e.Subject] == nil {
			subj[domain][e.Subject] = evBySubject{}
		}
		subj[domain][e.Subject][e.Type] = append(subj[domain][e.Subject][e.Type], e)
	}
	byObj := map[string][]evOp{} // domain:id → acknowledged writes
	for _, op := range ops {
		r.Writes++
		r.Statuses[op.Status]++
		switch op.Result {
		case evAcked:
			r.Acked++
			if op.ID != "" {
				byObj[op.Domain+":"+op.ID] = append(byObj[op.Domain+":"+op.ID], op)
			}
		case evRefused:
			r.Refused++
		default:
			r.Unknown++
		}
	}
	unknownRotations := map[string]int{}
	for _, op := range ops {
		if op.Domain == "session" && op.Kind == "rotate" && op.Result == evUnknown {
			unknownRotations[op.ID]++
		}
	}
	checkTokens(&r, subj["token"], st.Tokens, byObj)
	checkQuotes(&r, subj["quote"], st.Quotes, byObj)
	checkCases(&r, subj["case"], st.Cases, byObj)
	checkSessions(&r, subj["session"], st.Sessions, byObj, unknownRotations)
	sort.Strings(r.Mismatches)
	sort.Strings(r.Lost)
	return r
}

// ids is the union of the keys of the maps given.
func ids[A, B any](a map[string]A, b map[string]B, ops map[string][]evOp, domain string) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	for k := range ops {
		if id, ok := strings.CutPrefix(k, domain+":"); ok {
			set[id] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func checkTokens(r *evReport, evs map[string]evBySubject, st map[string]evToken, acked map[string][]evOp) {
	for _, id := range ids(st, evs, acked, "token") {
		r.Objects["token"]++
		e, tok := evs[id], st[id]
		_, exists := st[id]
		if !exists {
			if len(e) > 0 {
				r.mismatch("token %s: %d events, no such token", id, e.n("token.issued", "token.revoked"))
			} else {
				r.unconfirmedLost("token %s: issue acknowledged, no token and no event", id)
			}
			continue
		}
		if n := e.n("token.issued"); n != 1 {
			r.mismatch("token %s: %d token.issued events", id, n)
		}
		switch n := e.n("token.revoked"); {
		case tok.Revoked && n != 1:
			r.mismatch("token %s: revoked, %d token.revoked events", id, n)
		case !tok.Revoked && n != 0:
			r.mismatch("token %s: not revoked, %d token.revoked events", id, n)
		}
		for _, ev := range e["token.revoked"] {
			if from, _ := ev.Data["cascadeFrom"].(string); from != "" && !st[from].Revoked {
				r.mismatch("token %s: revoked with %s, which is not revoked", id, from)
			}
		}
		for _, op := range acked["token:"+id] {
			if op.Kind == "revoke" && !tok.Revoked {
				r.lost("token %s: revocation acknowledged, not revoked and no event", id)
			}
		}
	}
}

// versions checks that the events of one object carry the stateVersions 1..to, each once (the
// create's is 1), and none above; it returns the highest version an event carries.
func versions(r *evReport, what, id string, e evBySubject, types []string, to int64) int64 {
	got := map[int64]int{}
	top := int64(0)
	for _, t := range types {
		for _, ev := range e[t] {
			v := dataInt(ev.Data, "stateVersion")
			if v == 0 && t == "case.created" {
				v = 1
			}
			got[v]++
			top = max(top, v)
		}
	}
	for v := int64(1); v <= to; v++ {
		if got[v] != 1 {
			r.mismatch("%s %s: version %d has %d events", what, id, v, got[v])
		}
	}
	for v, n := range got {
		if v < 1 || v > to {
			r.mismatch("%s %s: %d events at version %d, the object is at %d", what, id, n, v, to)
		}
	}
	return top
}

func dataInt(d map[string]any, k string) int64 {
	f, _ := d[k].(float64)
	return int64(f)
}

var quoteTypes = []string{"quote.created", "quote.updated", "quote.submitted"}

func checkQuotes(r *evReport, evs map[string]evBySubject, st map[string]evObject, acked map[string][]evOp) {
	for _, id := range ids(st, evs, acked, "quote") {
		r.Objects["quote"]++
		e, q := evs[id], st[id]
		_, exists := st[id]
		top := int64(0)
		switch {
		case exists:
			if n := e.n("quote.created"); n != 1 {
				r.mismatch("quote %s: %d quote.created events", id, n)
			}
			if n := e.n("quote.deleted"); n != 0 {
				r.mismatch("quote %s: exists, %d quote.deleted events", id, n)
			}
			if submitted, n := q.Status == "SUBMITTED", e.n("quote.submitted"); submitted != (n == 1) || n > 1 {
				r.mismatch("quote %s: %s, %d quote.submitted events", id, q.Status, n)
			}
			top = max(versions(r, "quote", id, e, quoteTypes, q.Version), q.Version)
		case len(e) > 0:
			// Gone: created and deleted, each once, with every version between.
			if c, d := e.n("quote.created"), e.n("quote.deleted"); c != 1 || d != 1 {
				r.mismatch("quote %s: gone, %d quote.created and %d quote.deleted events", id, c, d)
			}
			hi := int64(0)
			for _, t := range quoteTypes {
				for _, ev := range e[t] {
					hi = max(hi, dataInt(ev.Data, "stateVersion"))
				}
			}
			top = versions(r, "quote", id, e, quoteTypes, hi)
		}
		for _, op := range acked["quote:"+id] {
			switch {
			case !exists && len(e) == 0:
				r.lost("quote %s: %s acknowledged, no quote and no event", id, op.Kind)
			case op.Kind == "delete" && exists:
				r.lost("quote %s: delete acknowledged, the quote exists", id)
			case op.Version > top:
				r.lost("quote %s: %s acknowledged at version %d, the quote and its events stop at %d", id, op.Kind, op.Version, top)
			}
		}
	}
}

// caseEventType is the event of a history entry's transition.
var caseEventType = map[string]string{"create": "case.created", "escalate": "case.escalated", "auto_escalate": "case.escalated",
	"assign": "case.assigned", "resolve": "case.resolved", "reopen": "case.reopened"}

var caseTypes = []string{"case.created", "case.escalated", "case.assigned", "case.resolved", "case.reopened"}

func checkCases(r *evReport, evs map[string]evBySubject, st map[string]evCase, acked map[string][]evOp) {
	for _, id := range ids(st, evs, acked, "case") {
		r.Objects["case"]++
		e, c := evs[id], st[id]
		if _, exists := st[id]; !exists {
			if len(e) > 0 {
				r.mismatch("case %s: %d events, no such case", id, len(e))
			} else {
				r.lost("case %s: create acknowledged, no case and no event", id)
			}
			continue
		}
		if n := e.n("case.created"); n != 1 {
			r.mismatch("case %s: %d case.created events", id, n)
		}
		versions(r, "case", id, e, caseTypes, c.Version)
		at := map[int64]evEvent{}
		for _, t := range caseTypes {
			for _, ev := range e[t] {
				v := dataInt(ev.Data, "stateVersion")
				if t == "case.created" {
					v = 1
				}
				at[v] = ev
			}
		}
		for _, h := range c.History {
			ev, ok := at[h.Version]
			switch {
			case !ok:
				continue // counted by versions
			case ev.Type != caseEventType[h.Transition]:
				r.mismatch("case %s: version %d is %s in the history, %s in the events", id, h.Version, h.Transition, ev.Type)
			case (h.Transition == "auto_escalate") != (ev.Data["auto"] == true):
				r.mismatch("case %s: version %d is %s in the history, auto=%v in its event", id, h.Version, h.Transition, ev.Data["auto"])
			}
		}
		if n := len(c.History); n > 0 && c.History[n-1].Version != c.Version {
			r.mismatch("case %s: at version %d, its history ends at %d", id, c.Version, c.History[n-1].Version)
		}
		for _, op := range acked["case:"+id] {
			if op.Version > c.Version {
				r.lost("case %s: %s acknowledged at version %d, the case is at %d", id, op.Kind, op.Version, c.Version)
			}
		}
	}
}

// The session events that end a session.
var sessionEnds = []string{"session.revoked", "session.logged_out", "session.evicted"}

func checkSessions(r *evReport, evs map[string]evBySubject, st map[string]evSession, acked map[string][]evOp, unknownRot map[string]int) {
	for _, id := range ids(st, evs, acked, "session") {
		r.Objects["session"]++
		e, s := evs[id], st[id]
		if !s.Live && len(e) == 0 {
			for _, op := range acked["session:"+id] {
				if op.Kind == "create" {
					r.unconfirmedLost("session %s: create acknowledged, no session and no event", id)
				}
			}
			continue // a create whose answer was lost and that did not happen
		}
		if n := e.n("session.created"); n != 1 {
			r.mismatch("session %s: %d session.created events", id, n)
		}
		switch n := e.n(sessionEnds...); {
		case s.Live && n != 0:
			r.mismatch("session %s: live, %d ending events", id, n)
		case !s.Live && n != 1:
			r.mismatch("session %s: ended, %d ending events", id, n)
		}
		for _, ev := range e["session.evicted"] {
			if by, _ := ev.Data["evictedBy"].(string); by == "" || evs[by].n("session.created") != 1 {
				r.mismatch("session %s: evicted by %q, which has no session.created", id, by)
			}
		}
		var rotations []evOp
		for _, op := range acked["session:"+id] {
			switch op.Kind {
			case "rotate":
				rotations = append(rotations, op)
			case "revoke", "logout":
				if s.Live {
					r.lost("session %s: %s acknowledged, the session is live", id, op.Kind)
				}
			}
		}
		rot := e.n("session.rotated")
		if rot > len(rotations)+unknownRot[id] {
			r.mismatch("session %s: %d rotations acknowledged, %d unknown, %d session.rotated events", id, len(rotations), unknownRot[id], rot)
		}
		// Each acknowledged rotation has its event, written while it ran: a session's state
		// holds no count of rotations, so the events are matched to the rotations by time.
		for _, op := range unmatched(rotations, e["session.rotated"]) {
			if s.Live && within(s.LastRotated, op) {
				r.mismatch("session %s: rotated at %s (acknowledged), no session.rotated event then", id, s.LastRotated.Format(time.RFC3339Nano))
			} else {
				r.lost("session %s: rotation acknowledged at %s, no session.rotated event then", id, op.Return.Format(time.RFC3339Nano))
			}
		}
		if s.Live && !s.LastRotated.IsZero() != (rot > 0) {
			r.mismatch("session %s: last rotated at %v, %d session.rotated events", id, s.LastRotated, rot)
		}
	}
}

// TestEventsCheckOnKnownHistories runs checkEvents on small fabricated runs (no Redis): a
// consistent one passes; each break of "an event if and only if its change" is found (an
// acknowledged change without its event, an event without its change, a duplicate), and an
// acknowledged write in neither is counted as lost, not as a mismatch.
func TestEventsCheckOnKnownHistories(t *testing.T) {
	ev := func(id, typ, subject string, data map[string]any) evEvent {
		return evEvent{ID: id, Type: typ, Subject: subject, Data: data}
	}
	v := func(n int) map[string]any { return map[string]any{"stateVersion": float64(n)} }
	t0 := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	rotated := t0.Add(15 * time.Millisecond)
	ops := []evOp{
		{Domain: "token", Kind: "issue", ID: "tk1", Result: evAcked},
		{Domain: "token", Kind: "issue", ID: "tk2", Result: evAcked},
		{Domain: "token", Kind: "revoke", ID: "tk1", Result: evAcked},
		{Domain: "quote", Kind: "create", ID: "q1", Result: evAcked, Version: 1},
		{Domain: "quote", Kind: "patch", ID: "q1", Result: evAcked, Version: 2},
		{Domain: "quote", Kind: "submit", ID: "q1", Result: evUnknown},
		{Domain: "case", Kind: "create", ID: "c1", Result: evAcked, Version: 1},
		{Domain: "case", Kind: "escalate", ID: "c1", Result: evAcked, Version: 2},
		{Domain: "session", Kind: "create", ID: "s1", Result: evAcked},
		{Domain: "session", Kind: "rotate", ID: "s1", Result: evAcked, Call: t0.Add(10 * time.Millisecond), Return: t0.Add(20 * time.Millisecond)},
		{Domain: "session", Kind: "create", ID: "s2", Result: evAcked},
		{Domain: "session", Kind: "logout", ID: "s2", Result: evAcked},
		{Domain: "session", Kind: "create", Result: evUnknown},
	}
	events := []evEvent{
		ev("1-0", "token.issued", "tk1", nil), ev("2-0", "token.issued", "tk2", nil),
		ev("3-0", "token.revoked", "tk1", nil), ev("4-0", "token.revoked", "tk2", map[string]any{"cascadeFrom": "tk1"}),
		ev("5-0", "quote.created", "q1", v(1)), ev("6-0", "quote.updated", "q1", v(2)), ev("7-0", "quote.submitted", "q1", v(3)),
		ev("8-0", "case.created", "c1", nil), ev("9-0", "case.escalated", "c1", v(2)), ev("10-0", "case.escalated", "c1", map[string]any{"stateVersion": float64(3), "auto": true}),
		ev("11-0", "session.created", "s1", nil), {ID: "12-0", Type: "session.rotated", Subject: "s1", Time: rotated},
		ev("13-0", "session.created", "s2", nil), ev("14-0", "session.logged_out", "s2", nil),
		ev("15-0", "session.created", "s3", nil), ev("16-0", "session.evicted", "s3", map[string]any{"evictedBy": "s1"}),
	}
	state := func() evState {
		return evState{
			Tokens: map[string]evToken{"tk1": {Revoked: true}, "tk2": {Revoked: true}},
			Quotes: map[string]evObject{"q1": {Status: "SUBMITTED", Version: 3}},
			Cases: map[string]evCase{"c1": {evObject: evObject{Status: "ESCALATED", Version: 3},
				History: []evTransition{{"create", 1}, {"escalate", 2}, {"auto_escalate", 3}}}},
			Sessions: map[string]evSession{"s1": {Live: true, LastRotated: rotated}, "s2": {}, "s3": {}, "s4": {}},
		}
	}
	without := func(id string) []evEvent {
		var out []evEvent
		for _, e := range events {
			if e.ID != id {
				out = append(out, e)
			}
		}
		return out
	}
	tests := []struct {
		name             string
		events           []evEvent
		state            func(evState) evState
		ops              []evOp
		mismatches, lost int
	}{
		{name: "consistent", events: events},
		{name: "a revocation without its event", events: without("3-0"), mismatches: 1},
		{name: "a cascade's revocation without its event", events: without("4-0"), mismatches: 1},
		{name: "a patch without its event", events: without("6-0"), mismatches: 1},
		{name: "a submission without its event", events: without("7-0"), mismatches: 2},
		{name: "a sweeper's escalation without its event", events: without("10-0"), mismatches: 1},
		{name: "a rotation without its event", events: without("12-0"), mismatches: 2},
		{name: "a logout without its event", events: without("14-0"), mismatches: 1},
		{name: "an eviction without its event", events: without("16-0"), mismatches: 1},
		{name: "a revocation event, the token live", events: events,
			state: func(s evState) evState { s.Tokens["tk2"] = evToken{}; return s }, mismatches: 1},
		{name: "an update event beyond the quote's version", events: events,
			state: func(s evState) evState { s.Quotes["q1"] = evObject{Status: "DRAFT", Version: 2}; return s }, mismatches: 2},
		{name: "a logout event, the session live", events: events,
			state: func(s evState) evState { s.Sessions["s2"] = evSession{Live: true}; return s }, mismatches: 1, lost: 1},
		{name: "a transition the history names otherwise", events: events,
			state: func(s evState) evState {
				c := s.Cases["c1"]
				c.History = []evTransition{{"create", 1}, {"assign", 2}, {"auto_escalate", 3}}
				s.Cases["c1"] = c
				return s
			}, mismatches: 1},
		{name: "a duplicate event", events: append(append([]evEvent(nil), events...), ev("17-0", "quote.updated", "q1", v(2))), mismatches: 1},
		{name: "a case's events, no case", events: events,
			state: func(s evState) evState { delete(s.Cases, "c1"); return s }, mismatches: 1},
		{name: "an acknowledged patch lost with its event", events: without("7-0"),
			state: func(s evState) evState { s.Quotes["q1"] = evObject{Status: "DRAFT", Version: 2}; return s },
			ops:   append(append([]evOp(nil), ops...), evOp{Domain: "quote", Kind: "patch", ID: "q1", Result: evAcked, Version: 3}), lost: 1},
		{name: "an acknowledged rotation lost with its event", events: without("12-0"),
			state: func(s evState) evState { s.Sessions["s1"] = evSession{Live: true}; return s }, lost: 1},
		{name: "a rotation event written after the rotation's answer", events: append(without("12-0"),
			evEvent{ID: "17-0", Type: "session.rotated", Subject: "s1", Time: t0.Add(time.Second)}),
			state: func(s evState) evState {
				s.Sessions["s1"] = evSession{Live: true, LastRotated: t0.Add(time.Second)}
				return s
			}, lost: 1},
		{name: "an unknown submit that did not happen", events: without("7-0"),
			state: func(s evState) evState { s.Quotes["q1"] = evObject{Status: "DRAFT", Version: 2}; return s }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := state()
			if tc.state != nil {
				st = tc.state(st)
			}
			o := ops
			if tc.ops != nil {
				o = tc.ops
			}
			r := checkEvents(o, tc.events, st)
			if len(r.Mismatches) != tc.mismatches || len(r.Lost) != tc.lost {
				t.Errorf("%d mismatches, %d lost; want %d, %d\nmismatches: %q\nlost: %q", len(r.Mismatches), len(r.Lost), tc.mismatches, tc.lost, r.Mismatches, r.Lost)
			}
		})
	}
}

// clockSlack is how far a Redis time may stray from the test's readings around a call
// (milliseconds, one host).
const clockSlack = 5 * time.Millisecond

// within reports whether t falls while op ran.
func within(t time.Time, op evOp) bool {
	return !t.Before(op.Call.Add(-clockSlack)) && !t.After(op.Return.Add(clockSlack))
}

// unmatched are the ops no event was written during: each op, in call order, takes the
// earliest event not taken yet that falls while it ran.
func unmatched(ops []evOp, events []evEvent) []evOp {
	slices.SortFunc(ops, func(a, b evOp) int { return a.Call.Compare(b.Call) })
	taken := make([]bool, len(events))
	var out []evOp
	for _, op := range ops {
		best := -1
		for i, e := range events {
			if !taken[i] && within(e.Time, op) && (best < 0 || e.Time.Before(events[best].Time)) {
				best = i
			}
		}
		if best < 0 {
			out = append(out, op)
			continue
		}
		taken[best] = true
	}
	return out
}
