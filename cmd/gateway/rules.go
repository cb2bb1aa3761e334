package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashgate/hashgate/internal/accessrules"
)

const rulesUsage = "usage: gateway rules check FILE | gateway rules explain FILE --method M --host H --uri U [flags]   (each answers --help)"

// rulesCommand is `gateway rules check|explain`.
func rulesCommand(args []string, stdout io.Writer) error {
	if len(args) >= 1 && isHelp(args[0]) {
		_, err := fmt.Fprintln(stdout, rulesUsage)
		return err
	}
	if len(args) == 0 {
		return usageError{rulesUsage}
	}
	switch args[0] {
	case "check":
		return rulesCheck(args[1:], stdout)
	case "explain":
		return rulesExplain(args[1:], stdout)
	}
	return usageError{fmt.Sprintf("unknown rules command %q\n%s", args[0], rulesUsage)}
}

// loadRules parses a rules command's flags into fs and its FILE argument (before or after the
// flags), and loads FILE. It answers no rules after --help (nil error) or with the error: a usage
// error when FILE is missing, FILE's problems by line.
func loadRules(fs *cmdFlags, args []string, stdout io.Writer) (*accessrules.Set, string, error) {
	file, args := fileArg(args)
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return nil, file, err
	}
	if file == "" {
		return nil, file, usageError{fs.Name() + ": name the FILE\n" + flagUsage(fs)}
	}
	set, err := accessrules.Load(file)
	if err != nil {
		return nil, file, fmt.Errorf("%s: %w", file, err)
	}
	return set, file, nil
}

// fileArg takes the FILE argument, before or after the flags.
func fileArg(args []string) (file string, rest []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	if n := len(args); n > 0 && !strings.HasPrefix(args[n-1], "-") && (n < 2 || !strings.HasPrefix(args[n-2], "-") || strings.Contains(args[n-2], "=")) {
		return args[n-1], args[:n-1]
	}
	return "", args
}

// rulesCheck parses FILE: exit 0 and a summary, or 1 with each problem by line.
func rulesCheck(args []string, stdout io.Writer) error {
	fs := newFlagSet("rules check", "check an access rules file (GATEWAY_ACCESS_RULES): exit 0, or 1 listing each problem by line (FILE before or after the flags)")
	set, file, err := loadRules(fs, args, stdout)
	if set == nil {
		return err // nil after --help
	}
	_, err = fmt.Fprintf(stdout, "%s: %d rules, default %s\n", file, len(set.Rules), set.Default.Describe())
	return err
}

// rulesExplain says which rule of FILE decides a request and why, and, given a credential's
// attributes, what forward auth answers.
func rulesExplain(args []string, stdout io.Writer) error {
	fs := newFlagSet("rules explain", "say which rule of FILE decides a forwarded request and why, and what GET /v1/authorize answers for the credential described (FILE before or after the flags)")
	method := fs.String("method", "GET", "the forwarded request's method")
	host := fs.String("host", "", "the forwarded request's host (X-Forwarded-Host)")
	uri := fs.String("uri", "/", "the forwarded request's target, as sent (X-Forwarded-Uri / X-Original-URI)")
	kind := fs.String("kind", "", "the credential's kind, session or token (unset: no credential unless --level, --groups or --scopes are given: then session, or token with --scopes)")
	level := fs.String("level", "", "the credential's level, BASIC or MFA (default BASIC)")
	tenant := fs.String("tenant", "", "the credential's tenant")
	groups := fs.String("groups", "", "the credential's groups, comma-separated")
	scopes := fs.String("scopes", "", "the token's scopes, comma-separated")
	set, _, err := loadRules(fs, args, stdout)
	if set == nil {
		return err // nil after --help
	}
	rule, lines := set.Explain(accessrules.Request{Method: *method, Host: *host, URI: *uri})
	lines = append(lines, rule.Label()+": "+rule.Describe())
	subj := accessrules.Subject{Kind: *kind, Level: *level, Tenant: *tenant, Groups: list(*groups), Scopes: list(*scopes)}
	if subj.Kind == "" && (subj.Level != "" || subj.Tenant != "" || len(subj.Groups) > 0 || len(subj.Scopes) > 0) {
		subj.Kind = accessrules.KindSession
		if len(subj.Scopes) > 0 {
			subj.Kind = accessrules.KindToken
		}
	}
	if subj.Level == "" {
		subj.Level = "BASIC"
	}
	lines = append(lines, "answer: "+verdict(rule, subj))
	_, err = fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	return err
}

func verdict(rule *accessrules.Rule, s accessrules.Subject) string {
	switch {
	case rule.Policy == accessrules.Deny:
		return "403 access-denied, with or without a credential"
	case rule.Policy == accessrules.Allow && s.Kind == "":
		return "204 anonymous (no credential)"
	case rule.Policy == accessrules.Allow:
		return "200 with the credential's X-Auth-* headers"
	case s.Kind == "":
		return "401 without a credential (describe one with --kind, --level, --groups, --scopes)"
	}
	if missing := rule.Require.Missing(s); missing != "" {
		return "403 for this " + s.Kind + ": it lacks " + missing
	}
	return "200 for this " + s.Kind
}

func list(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
