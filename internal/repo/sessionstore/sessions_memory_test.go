package sessionstore

import (
	"context"
	"slices"
	"testing"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// sessMemoryBudget is what a plain session hash (ACTIVE, BASIC, no device information, no MFA
// challenge; user "user-0001", tenant "acme") costs in MEMORY USAGE on Redis 8, key included, as
// measured: 280 B. Its seven fields are userId, tenantId, schemaVersion, createdAtMs,
// updatedAtMs, absoluteExpiresAtMs (readable names; the last four required by the data-model
// rules) and verifierMac (22 characters: the token's verifier as a keyed MAC); status and
// authLevel are written only once they leave ACTIVE and BASIC. The key type is "sess" and the
// id part 18 characters, so that the key fits 44 bytes (a 48 B class).
const sessMemoryBudget = 280

// sessUserMemoryBudget is what the user's hash of the per-user layout holding one plain
// session costs in MEMORY USAGE on Redis 8, key included, as measured with the bench's longest
// sampled user id and tenant (sessUserMemoryID, "default"): 328 B. The hash holds the five
// fields every hash carries (userId, tenantId, schemaVersion, createdAtMs, updatedAtMs: the
// data-model rules) and the session's live marker "<idPart>:live" =
// "<createdAtMs>.<verifierMac>" with its field TTL, which makes it a listpackex (a TTL slot per
// entry and a 32 B header): 25 B key and object, 32 B header and a listpack of 195 B in a 224 B
// allocation. The user's fields are the user's, not the session's: a second session adds its
// marker alone (about 73 B). Issue 6's 256 B bound is the per-session layout's session hash
// (sessMemoryBudget); a one-session user's all-in bound is issue 23's (sessAllInBudget).
// MEMORY USAGE does not count the hash's share of the server's field-expiry bookkeeping;
// docs/PERFORMANCE.md's used_memory figures (make bench) do.
const sessUserMemoryBudget = 328

// sessUserMemoryID is the longest user id of the plain sessions the bench samples
// ("bench-user-0" .. "bench-user-99").
const sessUserMemoryID = "bench-user-99"

// sessAllInBudget bounds every key a one-session user holds (the per-session layout's hash and
// device index, the per-user layout's hash), in MEMORY USAGE on Redis 8 (issue 23: ≤ 400 B).
const sessAllInBudget = 400

// TestSessionMemoryUsage measures a plain session as production names it (the default key
// prefix "hg"; the random user tag keeps the key apart from every other test's) on Redis 8, in
// both layouts, and checks it holds only the fields a plain session needs.
func TestSessionMemoryUsage(t *testing.T) {
	t.Parallel()
	var r8 testredis.Backend
	for _, b := range testredis.Backends() {
		if b.Name == "redis8" {
			r8 = b
		}
	}
	s := testredis.Open(t, r8)
	for _, layout := range []SessionLayout{LayoutPerSession, LayoutPerUser} {
		t.Run(string(layout), func(t *testing.T) {
			// (session events off: a session's form once the relay has copied them, which
			// deletes every event field — eventstore's TestRelayEmptiesTheUserHash)
			e := newSessEnv(t, s, "hg", func(o *SessionOptions) { o.Layout, o.Outbox = layout, events.SessionEventsOff })
			if got := e.r.layoutIn(); got != layout {
				t.Fatalf("layout %s on Redis 8: got %s", layout, got)
			}
			ctx := context.Background()
			ref := sessRef(t, "")
			// The bench's plain session: its user ids, the default tenant and timeouts.
			user, tenant := map[SessionLayout]string{LayoutPerSession: "user-0001", LayoutPerUser: sessUserMemoryID}[layout],
				map[SessionLayout]string{LayoutPerSession: "acme", LayoutPerUser: "default"}[layout]
			if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: user, TenantID: tenant, Status: session.Active,
				AuthLevel: session.LevelBasic, Idle: ImplicitIdle, Absolute: ImplicitAbsolute}); err != nil {
				t.Fatal(err)
			}
			key := e.sessKey(ref)
			t.Cleanup(func() { e.do(s.Client.B().Del().Key(key).Build()) })
			names, err := e.do(s.Client.B().Hkeys().Key(key).Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(names)
			want := []string{e.sessField(ref, fieldAbsoluteExpires), e.sessField(ref, fieldVerifierMAC), fieldCreatedAt, fieldSchemaVersion,
				fieldTenantID, fieldUpdatedAt, fieldUserID}
			if layout == LayoutPerUser { // the live marker holds the session's timestamps and MAC
				want = []string{e.sessField(ref, fieldLive), fieldCreatedAt, fieldSchemaVersion, fieldTenantID, fieldUpdatedAt, fieldUserID}
			}
			// The session's own key: its hash (and the device index), or the user's hash alone.
			budget, wantKeys := map[SessionLayout]int64{LayoutPerSession: sessMemoryBudget, LayoutPerUser: sessUserMemoryBudget}[layout],
				map[SessionLayout]int{LayoutPerSession: 2, LayoutPerUser: 1}[layout]
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("a plain session holds %v, want %v", names, want)
			}
			keys := e.tagKeys(ref.Tag)
			if len(keys) != wantKeys {
				t.Errorf("keys of a one-session user: %v", keys)
			}
			var all int64
			for _, k := range keys {
				n, err := e.do(s.Client.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				all += n
			}
			t.Logf("%s: MEMORY USAGE of every key of a one-session user (%d keys): %d B", layout, len(keys), all)
			if all > sessAllInBudget {
				t.Errorf("a one-session user holds %d B in all, want at most %d", all, sessAllInBudget)
			}
			n, err := e.do(s.Client.B().MemoryUsage().Key(key).Samples(0).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: MEMORY USAGE of a plain session's key (%d fields, key %d B): %d B", layout, len(names), len(key), n)
			if n > budget {
				t.Errorf("MEMORY USAGE = %d B, want at most %d", n, budget)
			}
		})
	}
}
