package main

import (
	"fmt"
	"strings"
)

// The events' target (issue 26): each write row measured again on a gateway with
// GATEWAY_EVENTS=false; events may cost each at most 10% of its throughput.
const eventsCostTarget = "events cost ≤ 10% of every write row's throughput"

// eventWriteRows are the write rows that append events; noEventsSuffix names their twins.
var eventWriteRows = []string{"mfa-verify", "quote-patch", "case-escalate", "session-create"}

const noEventsSuffix = "-noevents"

// eventsPairedRows are the write rows whose events-off twin also runs in paired rounds with
// them (-rounds; gateways.go): the session rows, whose wrk scripts can run again as they are.
var eventsPairedRows = []string{"mfa-verify", "session-create"}

// evaluateEvents adds the events' target: every write row measured both ways, each ratio
// (events on ÷ off) at least 0.9. The rows run minutes apart on two gateways over one Redis,
// so the ratio carries the run's noise (compare it with the repeat of a row in one run).
func (rp *report) evaluateEvents() {
	var parts []string
	pass, measured := true, 0
	for _, k := range eventWriteRows {
		on, okOn := rp.row(k)
		off, okOff := rp.row(k + noEventsSuffix)
		if !okOn || !okOff {
			continue
		}
		x := on.Res.RPS() / off.Res.RPS()
		parts = append(parts, fmt.Sprintf("%s %.0f vs %.0f req/s (%.2f ×)", k, on.Res.RPS(), off.Res.RPS(), x))
		pass = pass && x >= 0.9
		measured++
	}
	if measured == 0 {
		rp.Targets = append(rp.Targets, target{Name: eventsCostTarget, Missed: true, Detail: "not measured"})
		return
	}
	rp.Targets = append(rp.Targets, target{Name: eventsCostTarget, Pass: pass, Detail: "events on vs off: " + strings.Join(parts, "; ")})
}
