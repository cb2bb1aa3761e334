package main

import "fmt"

// The access rules' targets (issue 25).
const (
	rulesCostTarget    = "access rules cost ≤ 5% of authorize's throughput"
	rulesCeilingTarget = "authorize with access rules ≥ 0.75 × HTTP ceiling"
)

// evaluateRules adds the access rules' two targets. The cost is authz-rules ÷ authz-norules,
// the median of their paired rounds (the single rows without rounds). The ceiling share
// chains two paired medians when both exist — authorize ÷ ceiling (authz-session) times
// rules ÷ no rules — since the ceiling row is measured minutes before the rules row; else it
// is the rows' ratio.
func (rp *report) evaluateRules() {
	add := func(name string, can, pass bool, detail string) {
		rp.Targets = append(rp.Targets, target{Name: name, Pass: can && pass, Missed: !can, Detail: detail})
	}
	rules, okR := rp.row("authz-rules")
	noRules, okN := rp.row("authz-norules")
	ceil, okC := rp.row("ceiling-http")
	rowsCost := func() string {
		return fmt.Sprintf("%.0f req/s with %d rules, %.0f without (%.2f ×)", rules.Res.RPS(), rulesCount, noRules.Res.RPS(), rules.Res.RPS()/noRules.Res.RPS())
	}
	cost := 0.0
	switch {
	case len(rp.RulesPaired) > 0:
		cost = rp.RulesPaired.median()
		detail := fmt.Sprintf("%.2f × (median of %d paired rounds, rules ÷ no rules", cost, len(rp.RulesPaired))
		if okR && okN {
			detail += "; the table's rows: " + rowsCost()
		}
		add(rulesCostTarget, true, cost >= 0.95, detail+")")
	case okR && okN:
		cost = rules.Res.RPS() / noRules.Res.RPS()
		add(rulesCostTarget, true, cost >= 0.95, rowsCost())
	default:
		add(rulesCostTarget, false, false, "not measured")
	}
	switch {
	case len(rp.RulesPaired) > 0 && len(rp.Paired) > 0:
		x := rp.Paired.median() * cost
		detail := fmt.Sprintf("%.2f × (authorize ÷ ceiling %.2f × rules ÷ no rules %.2f, medians of paired rounds", x, rp.Paired.median(), cost)
		if okR && okC {
			detail += fmt.Sprintf("; the table's rows: %.2f ×", rules.Res.RPS()/ceil.Res.RPS())
		}
		add(rulesCeilingTarget, true, x >= 0.75, detail+")")
	case okR && okC:
		x := rules.Res.RPS() / ceil.Res.RPS()
		add(rulesCeilingTarget, true, x >= 0.75, fmt.Sprintf("%.2f × (the table's rows)", x))
	default:
		add(rulesCeilingTarget, false, false, "not measured")
	}
}
