package accessrules

import "strings"

// Request is the forwarded request a rule set decides: its method, host and request-target
// as the proxy sent them.
type Request struct {
	Method string
	Host   string
	URI    string
}

// InvalidPath is the rule that decides a request whose path does not normalize (NormalizePath):
// it is denied.
var InvalidPath = &Rule{Index: -2, Name: "invalid path", Policy: Deny}

// Decide returns the rule that decides r: the first that matches, else the default;
// InvalidPath for a path that does not normalize. It allocates nothing for a method, host and
// path already in normal form.
func (s *Set) Decide(r Request) *Rule {
	path, ok := NormalizePath(r.URI)
	if !ok {
		return InvalidPath
	}
	method := r.Method
	for i := 0; i < len(method); i++ {
		if c := method[i]; c >= 'a' && c <= 'z' {
			method = strings.ToUpper(method)
			break
		}
	}
	host := NormalizeHost(r.Host)
	for _, rule := range s.Rules {
		if rule.matches(method, host, path) {
			return rule
		}
	}
	return s.Default
}

func (r *Rule) matches(method, host, path string) bool {
	if len(r.methods) > 0 && !has(r.methods, method) && !(method == "HEAD" && has(r.methods, "GET")) {
		return false
	}
	if len(r.hosts) > 0 {
		ok := false
		for _, h := range r.hosts {
			if ok = h.match(host); ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(r.paths) == 0 {
		return true
	}
	for _, p := range r.paths {
		if p.match(path) {
			return true
		}
	}
	return false
}
