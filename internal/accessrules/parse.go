package accessrules

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds of a rules file.
const (
	MaxFileBytes = 1 << 20
	MaxRules     = 1000
)

// ErrInvalid wraps every refusal of a rules file; the message lists each problem by line.
var ErrInvalid = errors.New("access rules invalid")

// Load reads and parses the rules file at path.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses and compiles a rules file:
//
//	default: deny                 # or allow, or {require: {...}}; absent: deny
//	rules:
//	  - name: admin               # optional, named in refusals
//	    hosts: [admin.example.com, "*.example.com"]
//	    methods: [GET, POST]
//	    paths: ["/admin/**"]
//	    require: {level: MFA, groups: [admins], scopes: [...], tenants: [...], kinds: [session]}
//	  - paths: ["/public/**"]
//	    policy: allow             # or deny; a rule has either policy or require
//
// Every problem is reported, each with its line: "line 7: rules[1].require.level: ...".
func Parse(b []byte) (*Set, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: the file is %d bytes, over %d", ErrInvalid, len(b), MaxFileBytes)
	}
	p := &parser{}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	set := &Set{Default: &Rule{Index: -1, Name: "default", Policy: Deny}}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: line 1: the file is empty: write default and rules", ErrInvalid)
	}
	root := doc.Content[0]
	p.mapping(root, "", func(key string, v *yaml.Node) {
		switch key {
		case "default":
			p.parseDefault(v, set.Default)
		case "rules":
			if v.Kind != yaml.SequenceNode {
				p.errf(v, "rules: a list of rules")
				return
			}
			if len(v.Content) > MaxRules {
				p.errf(v, "rules: %d rules, over the %d allowed", len(v.Content), MaxRules)
			}
			for i, n := range v.Content {
				r := &Rule{Index: i, Line: n.Line}
				p.parseRule(n, fmt.Sprintf("rules[%d]", i), r)
				set.Rules = append(set.Rules, r)
			}
		default:
			p.errf(v, "%s: unknown key (default, rules)", key)
		}
	})
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("%w:\n%s", ErrInvalid, strings.Join(p.errs, "\n"))
	}
	return set, nil
}

type parser struct{ errs []string }

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("line %d: ", n.Line)+fmt.Sprintf(format, args...))
}

// mapping calls f for each key of a mapping node, refusing repeated keys.
func (p *parser) mapping(n *yaml.Node, where string, f func(key string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: a mapping (key: value) is expected", strings.TrimPrefix(where, "."))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if seen[k] {
			p.errf(n.Content[i], "%s%s: repeated key", where, k)
			continue
		}
		seen[k] = true
		f(k, n.Content[i+1])
	}
}

// strings reads a list of non-empty scalars (a single scalar is a list of one).
func (p *parser) strings(n *yaml.Node, where string) []string {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
		if len(items) == 0 {
			p.errf(n, "%s: an empty list matches nothing: leave the key out to match any", where)
		}
	}
	var out []string
	for _, it := range items {
		if it.Kind != yaml.ScalarNode || strings.TrimSpace(it.Value) == "" {
			p.errf(it, "%s: a non-empty string is expected", where)
			continue
		}
		out = append(out, it.Value)
	}
	return out
}

func (p *parser) parseDefault(v *yaml.Node, d *Rule) {
	d.Line = v.Line
	if v.Kind == yaml.ScalarNode {
		switch v.Value {
		case "allow":
			d.Policy = Allow
		case "deny":
			d.Policy = Deny
		default:
			p.errf(v, "default: allow, deny or {require: {...}}, not %q", v.Value)
		}
		return
	}
	p.mapping(v, "default.", func(key string, n *yaml.Node) {
		if key != "require" {
			p.errf(n, "default.%s: unknown key (require)", key)
			return
		}
		d.Policy, d.Require = Require, p.parseRequire(n, "default.require")
	})
	if d.Require == nil && len(p.errs) == 0 {
		p.errf(v, "default: allow, deny or {require: {...}}")
	}
}

// compileEach compiles each of a rule's patterns (hosts, paths) in order, reporting at v each
// one that does not compile.
func compileEach[T any](p *parser, v *yaml.Node, at string, patterns []string, compile func(string) (T, error)) []T {
	out := make([]T, 0, len(patterns))
	for _, s := range patterns {
		c, err := compile(s)
		if err != nil {
			p.errf(v, "%s: %v", at, err)
		}
		out = append(out, c)
	}
	return out
}

func (p *parser) parseRule(n *yaml.Node, where string, r *Rule) {
	hasPolicy := false
	p.mapping(n, where+".", func(key string, v *yaml.Node) {
		at := where + "." + key
		switch key {
		case "name":
			if v.Kind != yaml.ScalarNode {
				p.errf(v, "%s: a string is expected", at)
			}
			r.Name = v.Value
		case "hosts":
			r.Hosts = p.strings(v, at)
			r.hosts = append(r.hosts, compileEach(p, v, at, r.Hosts, compileHost)...)
		case "methods":
			r.Methods = p.strings(v, at)
			for _, m := range r.Methods {
				if !validMethod(m) {
					p.errf(v, "%s: %q is not an HTTP method", at, m)
				}
				r.methods = append(r.methods, strings.ToUpper(m))
			}
		case "paths":
			r.Paths = p.strings(v, at)
			r.paths = append(r.paths, compileEach(p, v, at, r.Paths, compilePath)...)
		case "policy":
			hasPolicy = true
			switch v.Value {
			case "allow":
				r.Policy = Allow
			case "deny":
				r.Policy = Deny
			default:
				p.errf(v, "%s: allow or deny, not %q (a credential is asked for with require)", at, v.Value)
			}
		case "require":
			r.Policy, r.Require = Require, p.parseRequire(v, at)
		default:
			p.errf(v, "%s: unknown key (name, hosts, methods, paths, policy, require)", at)
		}
	})
	switch {
	case n.Kind != yaml.MappingNode:
	case hasPolicy && r.Require != nil:
		p.errf(n, "%s: either policy or require, not both", where)
	case !hasPolicy && r.Require == nil:
		p.errf(n, "%s: say what the rule does: policy: allow|deny, or require: {...}", where)
	}
}

func (p *parser) parseRequire(n *yaml.Node, where string) *Requirement {
	q := &Requirement{}
	p.mapping(n, where+".", func(key string, v *yaml.Node) {
		at := where + "." + key
		switch key {
		case "level":
			if q.Level = v.Value; v.Kind != yaml.ScalarNode || !slices.Contains(levels, v.Value) {
				p.errf(v, "%s: BASIC or MFA", at)
			}
		case "groups":
			q.Groups = p.strings(v, at)
		case "scopes":
			q.Scopes = p.strings(v, at)
			for _, s := range q.Scopes {
				if strings.ContainsAny(s, " \t") {
					p.errf(v, "%s: %q: one scope per item", at, s)
				}
			}
		case "tenants":
			q.Tenants = p.strings(v, at)
		case "kinds":
			q.Kinds = p.strings(v, at)
			for _, k := range q.Kinds {
				if k != KindSession && k != KindToken {
					p.errf(v, "%s: %q: session or token", at, k)
				}
			}
		default:
			p.errf(v, "%s: unknown key (level, groups, scopes, tenants, kinds)", at)
		}
	})
	return q
}

// validMethod reports whether m is an HTTP method token (letters, any case).
func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		if c := m[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return m != ""
}
