package accessrules

import (
	"fmt"
	"strings"
)

// Explain says how s decides r, for people (gateway rules explain): the normalized request,
// why each earlier rule does not match, and the rule that decides. It is not the hot path.
func (s *Set) Explain(r Request) (*Rule, []string) {
	path, ok := NormalizePath(r.URI)
	if !ok {
		return InvalidPath, []string{fmt.Sprintf("the path %q does not decode (an invalid percent-encoding, a control character or invalid UTF-8 once decoded): denied", r.URI)}
	}
	method, host := strings.ToUpper(r.Method), NormalizeHost(r.Host)
	lines := []string{fmt.Sprintf("request: %s host %q path %q (normalized from %q)", method, host, path, r.URI)}
	for _, rule := range s.Rules {
		if rule.matches(method, host, path) {
			return rule, append(lines, fmt.Sprintf("%s (line %d) matches and decides", rule.Label(), rule.Line))
		}
		lines = append(lines, fmt.Sprintf("%s (line %d) does not match: %s", rule.Label(), rule.Line, rule.mismatch(method, host, path)))
	}
	return s.Default, append(lines, "no rule matches: the default decides")
}

func (r *Rule) mismatch(method, host, path string) string {
	switch {
	case len(r.methods) > 0 && !has(r.methods, method) && !(method == "HEAD" && has(r.methods, "GET")):
		return "method not in " + strings.Join(r.Methods, ", ")
	case len(r.hosts) > 0 && !(&Rule{hosts: r.hosts}).matches(method, host, path):
		return "host not in " + strings.Join(r.Hosts, ", ")
	}
	return "path not in " + strings.Join(r.Paths, ", ")
}

// Describe is what the rule does, in words: "allow", "deny", or "require level MFA, ...".
func (r *Rule) Describe() string {
	if r.Policy != Require {
		return r.Policy.String()
	}
	q := r.Require
	var parts []string
	if q.Level != "" {
		parts = append(parts, "level "+q.Level)
	}
	for _, l := range []struct {
		name string
		v    []string
	}{{"groups (any of)", q.Groups}, {"scopes (all of)", q.Scopes}, {"tenants (any of)", q.Tenants}, {"kinds (any of)", q.Kinds}} {
		if len(l.v) > 0 {
			parts = append(parts, l.name+" "+strings.Join(l.v, " "))
		}
	}
	if len(parts) == 0 {
		return "require a valid credential"
	}
	return "require a valid credential with " + strings.Join(parts, "; ")
}
