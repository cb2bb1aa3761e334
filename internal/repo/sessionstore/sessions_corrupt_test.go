package sessionstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A hash missing a required field, or holding a malformed one, is refused, counted and logged
// by field name only; a schema-1 hash is read with the default idle timeout.
func TestSessionCorruptAndOldSchema(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		// write puts the session's fields where its layout keeps them (per user: userId,
		// tenantId and schemaVersion are the user's, the others "<part>:<name>"), all with
		// 60 s to live.
		write := func(ref session.Ref, kv ...string) { e.sessWriteKV(ref, 60_000, kv...) }
		now := e.serverMs()
		abs, seen := strconv.FormatInt(now+3_600_000, 10), strconv.FormatInt(now, 10)
		tests := []struct {
			name string
			kv   []string
			bad  string
		}{
			// Per user: the user's fields gone from a hash that holds a live session (its marker).
			{"no user", []string{"absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen}, "userId"},
			{"no tenant", []string{"userId", "SECRET-USER", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "tenantId"},
			// status and authLevel may be absent (ACTIVE, BASIC), but a present one must be valid.
			{"empty status", []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "status"},
			{"unknown status", []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "GONE", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "status"},
			{"bad deadline", []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "ACTIVE", "authLevel", "BASIC", "absoluteExpiresAtMs", "soon", "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "absoluteExpiresAtMs"},
			{"empty level", []string{"userId", "SECRET-USER", "tenantId", "acme", "authLevel", "", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "authLevel"},
			{"unknown level", []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "ACTIVE", "authLevel", "ROOT", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}, "authLevel"},
			{"future schema", []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "ACTIVE", "authLevel", "BASIC", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "9"}, "schemaVersion"},
		}
		good := []string{"userId", "SECRET-USER", "tenantId", "acme", "status", "ACTIVE", "authLevel", "BASIC", "absoluteExpiresAtMs", abs, "idleTimeoutMs", "60000", "createdAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2"}
		tests = append(tests, struct {
			name string
			kv   []string
			bad  string
		}{"bad idle timeout", append(slices.Clone(good), "idleTimeoutMs", "soon"), "idleTimeoutMs"})
		for i, tt := range tests {
			ref := sessRef(t, "")
			kv := tt.kv
			if i%2 == 0 { // hashes written before tokenHash was dropped: the field changes nothing
				kv = append([]string{"tokenHash", sessRand(t, 32)}, kv...)
			}
			write(ref, kv...)
			_, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if !errors.Is(err, repo.ErrCorrupt) {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if p := e.sessPTTL(ref); p > 60_000 {
				t.Fatalf("%s: a corrupt session was refreshed", tt.name)
			}
			if !strings.Contains(e.logs.String(), tt.bad) {
				t.Fatalf("%s: log does not name %s: %s", tt.name, tt.bad, e.logs.String())
			}
		}
		if strings.Contains(e.logs.String(), "SECRET-USER") || strings.Contains(e.logs.String(), abs) {
			t.Fatalf("a value was logged: %s", e.logs.String())
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("outcome", "corrupt")); n != int64(len(tests)) {
			t.Fatalf("corrupt reads counted = %d", n)
		}

		// A key of another type where a session belongs: refused as corrupt, counted as a
		// script error.
		wrong := sessRef(t, "")
		wrongKey := e.sessWrongType(wrong)
		if _, err := e.r.Authorize(ctx, wrong, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, repo.ErrCorrupt) {
			t.Fatalf("wrong type: %v", err)
		}
		// The deliberately wrong-typed key goes: the keyspace audit after the suite checks
		// every key left against docs/KEYS.md.
		if err := e.do(e.s.Client.B().Del().Key(wrongKey).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if n := e.metric("hashgate_repo_script_errors", sessAttr("script", e.sessAuthorizeScript())); n != 1 {
			t.Fatalf("script errors counted = %d", n)
		}

		old := sessRef(t, "")
		write(old, "tokenHash", sessRand(t, 32), "verifierMac", testMAC, "userId", "u1", "tenantId", "acme", "status", "ACTIVE", "authLevel", "BASIC",
			"absoluteExpiresAtMs", abs, "createdAtMs", "1", "lastSeenAtMs", "1", "schemaVersion", "1")
		e.sessExpire(old, 1000)
		ac, err := e.r.Authorize(ctx, old, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
		if err != nil || repo.Outcome(ac.Outcome) != repo.OldSchema || !ac.Refreshed || ac.Status != session.Active || ac.AuthLevel != session.LevelBasic {
			t.Fatalf("schema 1: %+v %v", ac, err)
		}
		if p := e.sessPTTL(old); p < 29*60*1000 {
			t.Fatalf("schema 1 refreshed to %dms, want the default idle", p)
		}
		if v, err := e.r.Get(ctx, old, "acme"); err != nil || v.SchemaVersion != 1 || v.Status != session.Active || v.AuthLevel != session.LevelBasic {
			t.Fatalf("schema 1 view: %+v %v", v, err)
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("outcome", "old_schema")); n < 2 {
			t.Fatalf("old-schema reads counted = %d", n)
		}

		// Schema 2 in every shape: as written before the optional fields (tokenHash,
		// failedMfaAttempts 0, lastRotatedAtMs, idleTimeoutMs, status ACTIVE and authLevel BASIC
		// always present), as written before status and authLevel became optional (both present
		// with their defaults), and as written now (none of them). All are found ACTIVE and BASIC;
		// the idle window slides by idleTimeoutMs when present, else by the default.
		shapes := []struct {
			name     string
			kv       []string
			min, max int64 // the refreshed PTTL
		}{
			{"full", []string{"tokenHash", sessRand(t, 32), "failedMfaAttempts", "0", "lastRotatedAtMs", seen,
				"idleTimeoutMs", "120000", "status", "ACTIVE", "authLevel", "BASIC"}, 100_000, 120_000},
			{"lazy", []string{"status", "ACTIVE", "authLevel", "BASIC"}, 29 * 60 * 1000, 30 * 60 * 1000},
			{"lean", nil, 29 * 60 * 1000, 30 * 60 * 1000},
		}
		for _, sh := range shapes {
			ref := sessRef(t, "")
			write(ref, append(sh.kv, "verifierMac", testMAC, "userId", "u2", "tenantId", "acme",
				"absoluteExpiresAtMs", abs, "createdAtMs", seen, "updatedAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2")...)
			e.sessExpire(ref, 1000)
			ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
			if err != nil || repo.Outcome(ac.Outcome) != repo.Found || !ac.Refreshed || ac.FailedMFAAttempts != 0 ||
				ac.LastRotatedAt.UnixMilli() != now || ac.Status != session.Active || ac.AuthLevel != session.LevelBasic {
				t.Fatalf("%s: %+v %v", sh.name, ac, err)
			}
			if p := e.sessPTTL(ref); p < sh.min || p > sh.max {
				t.Fatalf("%s: refreshed to %dms, want %d..%d", sh.name, p, sh.min, sh.max)
			}
			if v, err := e.r.Get(ctx, ref, "acme"); err != nil || v.SchemaVersion != repo.SchemaVersion || v.LastRotatedAt.UnixMilli() != now ||
				v.Status != session.Active || v.AuthLevel != session.LevelBasic {
				t.Fatalf("%s view: %+v %v", sh.name, v, err)
			}
		}
	})
}
