package keyaudit

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

func TestParseRealDeclarations(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../docs/KEYS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	decls, err := ParseDecls(f)
	if err != nil {
		t.Fatal(err)
	}
	match := func(key string) string {
		for _, d := range decls {
			if d.re.MatchString(key) {
				return d.Pattern
			}
		}
		return ""
	}
	for key, want := range map[string]string{
		"hg:v1:token:{AbCdEfGhIjKl}:01hzzzzzzzzzzzzzzzzzzzzzzz": "<prefix>:v1:token:{<tenantTag>}:<tokenId>",
		"hg:v1:token:{01hzzzzzzzzzzzzzzzzzzzzzzz}":              "",
		"t1:v1:quote:{AbCdEfGhIjKl}:q_01h":                      "<prefix>:v1:quote:{<tenantTag>}:<quoteId>",
		"t1:v1:quote:{AbCdEfGhIjKl}:q_01h:items":                "<prefix>:v1:quote:{<tenantTag>}:<quoteId>:items",
		"t1:v1:case:{AbCdEfGhIjKl}:c_01h":                       "<prefix>:v1:case:{<tenantTag>}:<caseId>",
		"t1:v1:case:{AbCdEfGhIjKl}:c_01h:history":               "<prefix>:v1:case:{<tenantTag>}:<caseId>:history",
		"t1:v1:quota:{AbCdEfGhIjKl}:quotes":                     "<prefix>:v1:quota:{<tenantTag>}:quotes",
		"t1:v1:quota:{AbCdEfGhIjKl}:cases":                      "<prefix>:v1:quota:{<tenantTag>}:cases",
		"hg:v1:casetenants:{all}":                               "<prefix>:v1:casetenants:{all}",
		"hg:v1:sess:{AbCdEfGhIjKl}:x_y-z":                       "<prefix>:v1:sess:{<userTag>}:<idPart>",
		"hg:v1:token:{a}:b:extra":                               "",
		"hg:v1:token:{a:b}":                                     "",
		"other:key":                                             "",
	} {
		if got := match(key); got != want {
			t.Errorf("%s matched %q, want %q", key, got, want)
		}
	}
}

func TestAuditFindsEveryViolation(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	ctx := context.Background()
	c := s.Client
	decls, err := ParseDecls(strings.NewReader("```keyaudit\n<prefix>:v1:token:{<id>}  hash  3  64\n<prefix>:v1:idem:{<t>}:<op>:<h>  string  1  100\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	const jwt = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJzdmMtdGVzdCJ9.c2lnbmF0dXJlc2lnbmF0dXJlc2ln"
	const raw = "hgs_AbCdEfGhIjKl_0123456789012345678901234567890123456789abc"
	put := func(key string, ttl time.Duration, kv ...string) {
		cmd := c.B().Hset().Key(key).FieldValue()
		for i := 0; i+1 < len(kv); i += 2 {
			cmd = cmd.FieldValue(kv[i], kv[i+1])
		}
		if err := c.Do(ctx, cmd.Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if ttl > 0 {
			c.Do(ctx, c.B().Pexpire().Key(key).Milliseconds(ttl.Milliseconds()).Build())
		}
	}
	put("p:v1:token:{good}", time.Hour, "a", "1", "b", "2")
	put("p:v1:token:{nottl}", 0, "a", "1")
	put("p:v1:token:{big}", time.Hour, "a", "1", "b", "2", "c", "3", "d", "4")
	put("p:v1:token:{bytes}", time.Hour, "a", strings.Repeat("x", 100))
	put("p:v1:token:{secret}", time.Hour, "a", "my "+raw+" here")
	put("p:v1:token:{jwt}", time.Hour, "a", jwt)
	put("p:v1:token:{code}", time.Hour, "a", "123456")
	put("p:v1:mystery:{x}", time.Hour, "a", "1")
	c.Do(ctx, c.B().Set().Key("p:v1:token:{str}").Value("v").Px(time.Hour).Build())

	a := &Auditor{Client: c, Decls: decls, Match: "p:*", Secrets: Secrets{Exact: map[string]bool{"123456": true}}}
	rep, err := a.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range rep.Violations {
		got[v.Key] += v.Rule + " "
	}
	want := map[string]string{
		"p:v1:token:{nottl}":  "no-ttl",
		"p:v1:token:{big}":    "too-many-entries",
		"p:v1:token:{bytes}":  "too-many-bytes",
		"p:v1:token:{secret}": "secret",
		"p:v1:token:{jwt}":    "secret",
		"p:v1:token:{code}":   "secret",
		"p:v1:mystery:{x}":    "undocumented",
		"p:v1:token:{str}":    "wrong-type",
	}
	if rep.Keys != 9 {
		t.Errorf("scanned %d keys, want 9", rep.Keys)
	}
	for k, rule := range want {
		if !strings.Contains(got[k], rule) {
			t.Errorf("%s: violations %q, want %s", k, got[k], rule)
		}
	}
	if got["p:v1:token:{good}"] != "" {
		t.Errorf("good key flagged: %s", got["p:v1:token:{good}"])
	}
}

// TestAuditChecksRelayCheckpointFields: a user's checkpoint in a tenant's relay checkpoints
// hash without its field TTL is a violation; one with it is not (Redis with hash field expiry).
func TestAuditChecksRelayCheckpointFields(t *testing.T) {
	t.Parallel()
	fields := map[string]string{"userTagA": "1795735777019-0"}
	got := auditHashes(t, "<prefix>:v1:events:{<tenantTag>}:relayed", func(prefix, name string) string {
		return prefix + ":v1:events:{" + name + "}:relayed"
	}, map[string]userHash{
		"good":  {fields: fields, withTTL: []string{"userTagA"}},
		"nottl": {fields: fields},
	})
	if got["good"] != "" || !strings.Contains(got["nottl"], "no-ttl") {
		t.Fatalf("violations %v, want the checkpoint without a field TTL alone", got)
	}
}
