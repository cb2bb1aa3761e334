package main

import (
	"fmt"
	"io"
	"strings"
)

// The events' target (issue 26): each write row measured again on a gateway with
// GATEWAY_EVENTS=false; events may cost each at most 10% of its throughput.
const eventsCostTarget = "events cost ≤ 10% of every write row's throughput"

// eventWriteRows are the write rows that append events; noEventsSuffix names their twins.
var eventWriteRows = []string{"mfa-verify", "quote-patch", "case-escalate", "session-create"}

const noEventsSuffix = "-noevents"

// eventsPairedRows are the write rows whose events-off twin also runs in paired rounds with
// them (-rounds; gateways.go): all of them. The session rows' wrk scripts run again as they
// are; quote-patch and case-escalate use up their quotes' ETags and their cases' levels, so
// each of their runs gets objects of its own (plan.again).
var eventsPairedRows = eventWriteRows

// evaluateEvents adds the events' target: every write row measured both ways, each ratio
// (events on ÷ off) at least 0.9. A row with paired rounds is read from their median (the
// events-off gateway started next to the row's, the two alternating); one without, from the
// single rows, which run minutes apart on two gateways over one Redis and carry the run's
// noise. The detail says which.
func (rp *report) evaluateEvents() {
	var parts []string
	pass, measured := true, 0
	for _, k := range eventWriteRows {
		on, okOn := rp.row(k)
		off, okOff := rp.row(k + noEventsSuffix)
		rows := ""
		if okOn && okOff {
			rows = fmt.Sprintf("%.0f vs %.0f req/s (%.2f ×)", on.Res.RPS(), off.Res.RPS(), on.Res.RPS()/off.Res.RPS())
		}
		var x float64
		switch ps := rp.EventsPaired[k]; {
		case len(ps) > 0:
			x = ps.median()
			detail := fmt.Sprintf("%s %.2f × (median of %d paired rounds", k, x, len(ps))
			if rows != "" {
				detail += "; single rows " + rows
			}
			parts = append(parts, detail+")")
		case rows != "":
			x = on.Res.RPS() / off.Res.RPS()
			parts = append(parts, fmt.Sprintf("%s %s (single rows)", k, rows))
		default:
			continue
		}
		pass = pass && x >= 0.9
		measured++
	}
	if measured == 0 {
		rp.Targets = append(rp.Targets, target{Name: eventsCostTarget, Missed: true, Detail: "not measured"})
		return
	}
	rp.Targets = append(rp.Targets, target{Name: eventsCostTarget, Pass: pass, Detail: "events on vs off: " + strings.Join(parts, "; ")})
}

// printEventsPaired writes each write row's paired rounds with its events-off twin.
func (rp *report) printEventsPaired(w io.Writer) {
	for _, k := range eventWriteRows {
		printPaired(w, k+" without and with events, two gateways on the same Redis back to back, order alternating; the events' cost target uses the median",
			k+noEventsSuffix, k, rp.EventsPaired[k])
	}
}
