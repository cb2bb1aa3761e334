package keyaudit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/testredis"
)

// userHash is a hash a test writes: its fields, and those of them given a field TTL.
type userHash struct {
	fields  map[string]string
	withTTL []string
}

// auditUserHashes writes each hash as the user session hash "<prefix>:v1:sess:{<name>}" and
// audits them (auditHashes).
func auditUserHashes(t *testing.T, hashes map[string]userHash) map[string]string {
	t.Helper()
	return auditHashes(t, "<prefix>:v1:sess:{<userTag>}", func(prefix, name string) string {
		return prefix + ":v1:sess:{" + name + "}"
	}, hashes)
}

// auditHashes writes each hash at key(prefix, name) on Redis 8 (skipping the test without
// one), with an hour's TTL on the key and on the fields withTTL, audits them against the one
// declaration pattern decl and returns the violations by name, "rule: msg; " each. The keys go
// at cleanup: the suite's own audit would find the fields left without a TTL.
func auditHashes(t *testing.T, decl string, key func(prefix, name string) string, hashes map[string]userHash) map[string]string {
	t.Helper()
	var be *testredis.Backend
	for _, b := range testredis.Backends() {
		if b.Env == testredis.EnvRedis8 && b.URL != "" {
			be = &b
			break
		}
	}
	if be == nil {
		t.Skip("no Redis 8")
	}
	c := testredis.Open(t, *be).Client
	ctx := context.Background()
	prefix := testredis.Prefix(t)
	decls, err := ParseDecls(strings.NewReader("```keyaudit\n" + decl + "  hash  100  10000\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour.Milliseconds()
	names := map[string]string{} // key → name
	for name, h := range hashes {
		k := key(prefix, name)
		names[k] = name
		t.Cleanup(func() { c.Do(context.Background(), c.B().Del().Key(k).Build()) })
		set := c.B().Hset().Key(k).FieldValue()
		for f, v := range h.fields {
			set = set.FieldValue(f, v)
		}
		if err := c.Do(ctx, set.Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, c.B().Pexpire().Key(k).Milliseconds(hour).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if len(h.withTTL) > 0 {
			if err := c.Do(ctx, c.B().Hpexpire().Key(k).Milliseconds(hour).Fields().Numfields(int64(len(h.withTTL))).Field(h.withTTL...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := (&Auditor{Client: c, Decls: decls, Match: prefix + ":*"}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range rep.Violations {
		got[names[v.Key]] += v.Rule + ": " + v.Msg + "; "
	}
	return got
}

// TestAuditChecksSessionEventFields: a session event pending in a user's hash (ev.<n>) without
// its field TTL is a violation; one with it is not (Redis with hash field expiry).
func TestAuditChecksSessionEventFields(t *testing.T) {
	t.Parallel()
	const ev = "ev.1795735777019000"
	fields := map[string]string{"userId": "u", ev: "session.created"}
	got := auditUserHashes(t, map[string]userHash{
		"good":  {fields: fields, withTTL: []string{ev}},
		"nottl": {fields: fields},
	})
	if got["good"] != "" || !strings.Contains(got["nottl"], "no-ttl") {
		t.Fatalf("violations %v, want the event field without a field TTL alone", got)
	}
}

// TestAuditChecksSessionFields: a session's field in a user's hash ("<idPart>:<name>") without
// its field TTL is a violation naming every such field (the corrupt-value fixtures' HSET of one
// field, which drops nothing but gives none); the user's own fields (no ':') carry none, and a
// session whose fields all have one is clean.
func TestAuditChecksSessionFields(t *testing.T) {
	t.Parallel()
	const (
		live, status, idle = "AAAAAAAAAAAAAAAAAA:live", "AAAAAAAAAAAAAAAAAA:status", "AAAAAAAAAAAAAAAAAA:idleTimeoutMs"
		live2, level2      = "BBBBBBBBBBBBBBBBBB:live", "BBBBBBBBBBBBBBBBBB:authLevel"
	)
	fields := map[string]string{"userId": "u", "tenantId": "t", live: "1795735777019.dGVzdC12ZXJpZmllci1tYWM", status: "MFA_REQUIRED",
		idle: "soon", live2: "1795735777019.dGVzdC12ZXJpZmllci1tYWM", level2: "ROOT"}
	got := auditUserHashes(t, map[string]userHash{
		"good":  {fields: fields, withTTL: []string{live, status, idle, live2, level2}},
		"nottl": {fields: fields, withTTL: []string{live, live2}},
	})
	want := "no-ttl: session field " + idle + ", " + status + ", " + level2 + " has no field TTL; "
	if got["good"] != "" || got["nottl"] != want {
		t.Fatalf("violations %q, want on nottl alone %q", got, want)
	}
}
