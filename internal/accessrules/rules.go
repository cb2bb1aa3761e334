package accessrules

import (
	"strconv"
	"strings"
)

// Policy is what a rule does with a matching request.
type Policy uint8

// Policies.
const (
	// Deny refuses every request it matches, with or without a credential.
	Deny Policy = iota
	// Allow lets a request through without a credential (a valid one is still reported).
	Allow
	// Require needs a valid credential meeting the rule's Requirement.
	Require
)

func (p Policy) String() string {
	switch p {
	case Allow:
		return "allow"
	case Require:
		return "require"
	}
	return "deny"
}

// Levels a requirement may name, weakest first.
var levels = []string{"BASIC", "MFA"}

// Credential kinds a requirement may name.
const (
	KindSession = "session"
	KindToken   = "token"
)

// Requirement is what a credential must show to pass a Require rule. Every listed condition
// must hold: the level at least Level, any of Groups, all of Scopes, any of Tenants, any of
// Kinds.
type Requirement struct {
	Level   string
	Groups  []string
	Scopes  []string
	Tenants []string
	Kinds   []string
}

// Rule is one compiled rule: it matches when each of its hosts, methods and paths lists is
// empty or has a match.
type Rule struct {
	// Index is the rule's position in the file, from 0; Name its optional name.
	Index   int
	Name    string
	Line    int
	Hosts   []string
	Methods []string
	Paths   []string
	Policy  Policy
	Require *Requirement

	hosts   []hostPattern
	methods []string
	paths   []pathPattern
}

// Label names the rule in refusals and explanations: "rule 2 (admin)", or "default".
func (r *Rule) Label() string {
	if r.Index < 0 {
		return r.Name // "default", "invalid path"
	}
	s := "rule " + strconv.Itoa(r.Index)
	if r.Name != "" {
		s += " (" + r.Name + ")"
	}
	return s
}

// Set is a compiled rule set. It is immutable and safe for concurrent use.
type Set struct {
	Rules   []*Rule
	Default *Rule
}

// Subject is what a credential shows a requirement: its kind (KindSession or KindToken),
// level, tenant, groups and scopes.
type Subject struct {
	Kind   string
	Level  string
	Tenant string
	Groups []string
	Scopes []string
}

// Missing says what s lacks to meet q, in words naming no secret; "" when s meets it.
func (q *Requirement) Missing(s Subject) string {
	var miss []string
	if q.Level != "" && levelRank(s.Level) < levelRank(q.Level) {
		miss = append(miss, "level "+q.Level)
	}
	if len(q.Kinds) > 0 && !has(q.Kinds, s.Kind) {
		miss = append(miss, "a credential of kind "+strings.Join(q.Kinds, " or "))
	}
	if len(q.Tenants) > 0 && !has(q.Tenants, s.Tenant) {
		miss = append(miss, "one of the tenants "+strings.Join(q.Tenants, ", "))
	}
	if len(q.Groups) > 0 && !hasAny(q.Groups, s.Groups) {
		miss = append(miss, "membership of one of the groups "+strings.Join(q.Groups, ", "))
	}
	if len(q.Scopes) > 0 {
		var lack []string
		for _, sc := range q.Scopes {
			if s.Kind != KindToken || !has(s.Scopes, sc) {
				lack = append(lack, sc)
			}
		}
		if len(lack) > 0 {
			miss = append(miss, "a token with the scopes "+strings.Join(lack, " "))
		}
	}
	return strings.Join(miss, "; ")
}

// Met reports whether s meets q, without allocating (the hot path's check).
func (q *Requirement) Met(s Subject) bool {
	if q.Level != "" && levelRank(s.Level) < levelRank(q.Level) {
		return false
	}
	if len(q.Kinds) > 0 && !has(q.Kinds, s.Kind) ||
		len(q.Tenants) > 0 && !has(q.Tenants, s.Tenant) ||
		len(q.Groups) > 0 && !hasAny(q.Groups, s.Groups) {
		return false
	}
	for _, sc := range q.Scopes {
		if s.Kind != KindToken || !has(s.Scopes, sc) {
			return false
		}
	}
	return true
}

func levelRank(l string) int {
	for i, v := range levels {
		if v == l {
			return i
		}
	}
	return -1
}

func has(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func hasAny(want, got []string) bool {
	for _, g := range got {
		if has(want, g) {
			return true
		}
	}
	return false
}
