package main

// The Postman collection of docs/postman, run by newman (Postman's command-line runner; the
// pinned version is installed by scripts/newman-env.sh, and scripts/test.sh exports
// HASHGATE_TEST_NEWMAN) against the whole gateway (serve) on real Redis 8, with only the two
// variables a user sets: baseUrl and adminToken.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/hashgate/hashgate/api"
)

const (
	envNewman          = "HASHGATE_TEST_NEWMAN"
	postmanCollection  = "../../docs/postman/hashgate.postman_collection.json"
	postmanEnvironment = "../../docs/postman/hashgate.postman_environment.json"
)

// postmanFlows are the operations the collection must run (issue 14's flows, and issue 26's
// events and webhooks; not streamEvents: an SSE response never ends, and newman reads a
// response only once it has).
var postmanFlows = []string{
	"createSession", "getCurrentSession", "createMfaChallenge", "verifyMfa", "listMyDevices", "revokeMyOtherDevices", "logout",
	"issueToken", "introspectToken", "revokeToken",
	"createQuote", "putQuoteItem", "patchQuote", "submitQuote",
	"createCase", "escalateCase", "resolveCase", "getCaseHistory",
	"listEvents", "createWebhook", "getWebhook", "listWebhooks", "pingWebhook", "listWebhookDeliveries", "deleteWebhook",
}

// newmanReport is what the test reads of newman's JSON report.
type newmanReport struct {
	Run struct {
		Stats struct {
			Requests   struct{ Total, Failed int }
			Assertions struct{ Total, Failed int }
		}
		Failures []struct {
			Error  struct{ Name, Message, Test string }
			Source struct{ Name string }
		}
		Executions []struct {
			Item    struct{ Name string }
			Request struct {
				Method string
				URL    struct{ Path []string }
			}
			Response struct {
				Code   int
				Stream struct{ Data []byte }
			}
			Assertions []struct {
				Assertion string
				Error     *struct{ Message string }
			}
		}
	}
}

// TestPostmanCollection: every request of the collection runs against a live gateway and every
// one of its tests passes; each request has tests; together they run the flows.
func TestPostmanCollection(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(envNewman)
	if bin == "" {
		t.Skipf("%s is unset: run scripts/test.sh (scripts/newman-env.sh installs newman from the npm registry)", envNewman)
	}
	gw, admin := realGateway(t, nil)
	reportFile := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(bin, "run", postmanCollection, "--environment", postmanEnvironment,
		"--env-var", "baseUrl=http://"+gw, "--env-var", "adminToken="+admin,
		"--reporters", "cli,json", "--reporter-json-export", reportFile,
		"--color", "off", "--disable-unicode", "--timeout-request", "10000")
	out, runErr := cmd.CombinedOutput()
	raw, err := os.ReadFile(reportFile)
	if err != nil {
		t.Fatalf("newman wrote no report (%v): %v\n%s", runErr, err, out)
	}
	var rep newmanReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("newman report: %v", err)
	}
	for _, ex := range rep.Run.Executions {
		recordSecretsIn(ex.Response.Stream.Data)
	}
	if runErr != nil || rep.Run.Stats.Assertions.Failed > 0 || rep.Run.Stats.Requests.Failed > 0 || len(rep.Run.Failures) > 0 {
		for _, f := range rep.Run.Failures {
			t.Errorf("%s: %s: %s", f.Source.Name, f.Error.Test, f.Error.Message)
		}
		t.Fatalf("newman: %v\n%s", runErr, out)
	}

	ops := specRoutes(t)
	ran := map[string]bool{}
	for _, ex := range rep.Run.Executions {
		if len(ex.Assertions) == 0 {
			t.Errorf("request %q has no tests", ex.Item.Name)
		}
		id := ops.match(ex.Request.Method, "/"+strings.Join(ex.Request.URL.Path, "/"))
		if id == "" {
			t.Errorf("request %q: %s /%s is no operation of the spec", ex.Item.Name, ex.Request.Method, strings.Join(ex.Request.URL.Path, "/"))
		}
		ran[id] = true
	}
	for _, id := range postmanFlows {
		if !ran[id] {
			t.Errorf("the collection does not run %s", id)
		}
	}
	t.Logf("newman: %d requests, %d assertions, all passed", rep.Run.Stats.Requests.Total, rep.Run.Stats.Assertions.Total)
}

// The collection reads only baseUrl and adminToken from outside: every other variable it uses
// is one it sets itself (or one of Postman's dynamic variables, such as {{$guid}}), and the
// environment file holds just those two.
func TestPostmanCollectionNeedsOnlyBaseURLAndAdminToken(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(postmanCollection)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{"baseUrl": true, "adminToken": true}
	for _, m := range regexp.MustCompile(`pm\.collectionVariables\.set\(\\?"([A-Za-z]+)\\?"`).FindAllSubmatch(raw, -1) {
		set[string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`\{\{([^}]+)\}\}`).FindAllSubmatch(raw, -1) {
		if name := string(m[1]); !set[name] && !strings.HasPrefix(name, "$") {
			t.Errorf("the collection uses {{%s}}, which it never sets", name)
		}
	}
	if regexp.MustCompile(`pm\.(environment|globals|variables)\.get`).Match(raw) {
		t.Error("the collection reads variables other than its own collection variables")
	}
	var env struct{ Values []struct{ Key string } }
	rawEnv, err := os.ReadFile(postmanEnvironment)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rawEnv, &env); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, v := range env.Values {
		keys = append(keys, v.Key)
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"adminToken", "baseUrl"}) {
		t.Errorf("the environment holds %v, want baseUrl and adminToken", keys)
	}
}

// specRouteSet maps a request to the operation of the spec it calls.
type specRouteSet []struct {
	method, id string
	re         *regexp.Regexp
}

func specRoutes(t *testing.T) specRouteSet {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var rs specRouteSet
	param := regexp.MustCompile(`\\\{[^}]+\\\}`)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			re := regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(path), "[^/]+") + "$")
			rs = append(rs, struct {
				method, id string
				re         *regexp.Regexp
			}{method, op.OperationID, re})
		}
	}
	return rs
}

func (rs specRouteSet) match(method, path string) string {
	for _, r := range rs {
		if r.method == method && r.re.MatchString(path) {
			return r.id
		}
	}
	return ""
}

// recordSecretsIn records the token and MFA code a response body hands out (see recordSecret).
func recordSecretsIn(body []byte) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return
	}
	if v, ok := m["token"].(string); ok && v != "" {
		recordSecret(v)
	}
	if v, ok := m["code"].(string); ok && v != "" {
		recordSecretLine("code " + v)
	}
	if v, ok := m["secret"].(string); ok && v != "" {
		recordSecretLine("secret " + v)
	}
}
