package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesCheckAndExplain: check exits 0 on a valid file and 1 listing each problem by line;
// explain names the deciding rule, why earlier ones do not match, and the answer.
func TestRulesCheckAndExplain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("default: deny\nrules:\n  - name: public\n    paths: [\"/public/**\"]\n    policy: allow\n  - name: admin\n    paths: [\"/admin/**\"]\n    require: {level: MFA, groups: [admins]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("default: deny\nrules:\n  - paths: [admin]\n    policy: allow\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runRules := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), append([]string{"rules"}, args...), func(string) string { return "" }, &out, &errOut)
		return out.String(), err
	}
	if out, err := runRules("check", good); err != nil || !strings.Contains(out, "2 rules") {
		t.Fatalf("check good: %v %s", err, out)
	}
	_, err := runRules("check", bad)
	if err == nil || !strings.Contains(err.Error(), `line 3: rules[0].paths: path "admin" must start with /`) {
		t.Fatalf("check bad: %v", err)
	}
	if _, ok := err.(usageError); ok {
		t.Fatal("an invalid file is a usage error (exit 2), want exit 1")
	}
	out, err := runRules("explain", good, "--host", "app.example.com", "--uri", "/public/..;/ADMIN./users", "--level", "BASIC", "--groups", "admins")
	for _, want := range []string{
		`path "/admin/users"`,
		"rule 0 (public) (line 3) does not match: path not in /public/**",
		"rule 1 (admin) (line 6) matches and decides",
		"answer: 403 for this session: it lacks level MFA\n",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("explain: %v, output lacks %q:\n%s", err, want, out)
		}
	}
	if out, _ := runRules("explain", "--uri", "/x", good); !strings.Contains(out, "default decides") || !strings.Contains(out, "answer: 403 access-denied") {
		t.Errorf("explain, FILE after the flags:\n%s", out)
	}
}
