package repo

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

func TestParseSessionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		id   string
		ok   bool
	}{
		{"good", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBB", true},
		{"underscores in tag", "s_A_A_A_A_A_A__BBBBBBBBBBBBBBBBBB", true},
		{"short", "s_AAAAAAAAAAAA_BBBB", false},
		{"wrong prefix", "t_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"brace", "s_AAAAAAAAAAA}_BBBBBBBBBBBBBBBBBBBBBB", false},
		{"colon", "s_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBB:", false},
		{"no separator", "s_AAAAAAAAAAAAXBBBBBBBBBBBBBBBBBBBBBB", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ref, ok := ParseSessionID(tt.id)
			if ok != tt.ok || ok && ref.ID() != tt.id {
				t.Fatalf("ParseSessionID(%q) = %+v, %v", tt.id, ref, ok)
			}
		})
	}
}

func TestNewSessionsRefusesBadOptions(t *testing.T) {
	t.Parallel()
	s := testredis.Open(t, testredis.Backends()[0])
	tests := []struct {
		name  string
		tweak func(*SessionOptions)
	}{
		{"fraction 0", func(o *SessionOptions) { o.RefreshFraction = 0 }},
		{"fraction 1", func(o *SessionOptions) { o.RefreshFraction = 1 }},
		{"max", func(o *SessionOptions) { o.MaxPerUser = 0 }},
		{"max over the index bound", func(o *SessionOptions) { o.MaxPerUser = MaxSessionsPerUser + 1 }},
		{"limit", func(o *SessionOptions) { o.MFA.Limit = 0 }},
		{"negative cache TTL", func(o *SessionOptions) { o.CacheTTL = -time.Second }},
		{"long cache TTL", func(o *SessionOptions) { o.CacheTTL = MaxSessionCacheTTL + time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := sessDefaultOptions()
			tt.tweak(&o)
			if _, err := NewSessions(s, Keys{Prefix: "hg"}, o); !errors.Is(err, ErrSessionOptions) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// The verify script embeds the rate limiter's counter verbatim.
func TestVerifyScriptEmbedsFixedWindow(t *testing.T) {
	t.Parallel()
	b, err := scriptFS.ReadFile("scripts/session_verify.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), ratelimit.FixedWindowLua()) {
		t.Fatal("session_verify.lua's fixed_window differs from internal/ratelimit/scripts/fixed_window.lua")
	}
	if !strings.Contains(ratelimit.FixedWindowLua(), "'schemaVersion', '"+strconv.Itoa(SchemaVersion)+"'") {
		t.Fatal("the counter's schemaVersion differs from repo.SchemaVersion")
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		ref := e.create(tag, "acme", "alice", 30*time.Minute, 24*time.Hour)
		key := e.r.sessionKey(ref)
		if p := e.pttl(key); p <= 29*60*1000 || p > 30*60*1000 {
			t.Fatalf("pttl = %d, want the idle timeout", p)
		}
		// No hash of the token is stored (the key derives from it), and defaults are not written.
		for _, f := range []string{"tokenHash", sfStatus, sfAuthLevel, sfFailedMFA, sfLastSeenAt, sfLastRotatedAt, sfIdleTimeout} {
			if v := e.hget(key, f); v != "" {
				t.Fatalf("%s stored at create", f)
			}
		}

		ac, err := e.r.Authorize(ctx, ref)
		if err != nil || ac.UserID != "alice" || ac.TenantID != "acme" || ac.Status != SessionActive ||
			ac.AuthLevel != LevelBasic || ac.Refreshed || ac.Outcome != Found {
			t.Fatalf("authorize: %+v %v", ac, err)
		}
		if d := time.Until(ac.AbsoluteExpiresAt); d < 23*time.Hour || d > 24*time.Hour+time.Minute {
			t.Fatalf("absolute deadline in %v", d)
		}
		if _, err := e.r.Authorize(ctx, SessionRef{Tag: tag, Part: sessPart(t)}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another token of the same user: %v", err)
		}

		got, err := e.r.Get(ctx, ref, "acme")
		if err != nil || got.UserID != "alice" || got.DeviceLabel != "laptop" || got.CreatedAt.IsZero() ||
			got.LastSeenAt.IsZero() || got.SchemaVersion != SchemaVersion || got.FailedMFAAttempts != 0 {
			t.Fatalf("get: %+v %v", got, err)
		}
		if _, err := e.r.Get(ctx, ref, "globex"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get by another tenant: %v", err)
		}

		ref2 := e.create(tag, "acme", "alice", 30*time.Minute, 24*time.Hour)
		list, err := e.r.List(ctx, tag, "acme")
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if other, err := e.r.List(ctx, tag, "globex"); err != nil || len(other) != 0 {
			t.Fatalf("list by another tenant: %+v %v", other, err)
		}

		if ok, err := e.r.Revoke(ctx, ref2, "globex"); ok || err != nil {
			t.Fatalf("revoke by another tenant: %v %v", ok, err)
		}
		if _, err := e.r.Get(ctx, ref2, "acme"); err != nil {
			t.Fatalf("another tenant's revoke touched the session: %v", err)
		}
		if ok, err := e.r.Revoke(ctx, ref2, "acme"); !ok || err != nil {
			t.Fatalf("revoke: %v %v", ok, err)
		}
		if ok, err := e.r.Revoke(ctx, ref2, "acme"); ok || err != nil {
			t.Fatalf("revoke again: %v %v", ok, err)
		}
		if list, err := e.r.List(ctx, tag, "acme"); err != nil || len(list) != 1 || list[0].Ref != ref {
			t.Fatalf("list after revoke: %+v", list)
		}
		e.everyKeyHasTTL()
		if n := e.metric("hashgate_repo_reads", sessAttr("object", "session"), sessAttr("outcome", "found")); n < 3 {
			t.Fatalf("found reads counted = %d", n)
		}
		if n := e.metric("hashgate_repo_reads", sessAttr("object", "session"), sessAttr("outcome", "missing")); n < 1 {
			t.Fatalf("missing reads counted = %d", n)
		}
		// Every read records the payload it carried: at least the eight fields of a plain session.
		if count, sum := e.histogram("hashgate_repo_payload_bytes"); count < 3 || sum < int64(count)*40 {
			t.Fatalf("payload bytes: %d observations summing to %d", count, sum)
		}
	})
}

func TestSessionCreateBound(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.MaxPerUser = 2; o.LimitPolicy = LimitRefuse })
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := e.create(tag, "acme", "bob", time.Minute, time.Hour)
		e.create(tag, "acme", "bob", time.Minute, time.Hour)
		_, err := e.r.Create(ctx, NewSession{Ref: sessRef(t, tag), UserID: "bob", TenantID: "acme",
			Status: SessionActive, AuthLevel: LevelBasic, Idle: time.Minute, Absolute: time.Hour})
		if !errors.Is(err, apperr.SessionLimit) {
			t.Fatalf("third session: %v", err)
		}
		// An expired (here: deleted) session no longer counts: it is pruned on the next create.
		if err := e.do(e.s.Client.B().Del().Key(e.r.sessionKey(a)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		e.create(tag, "acme", "bob", time.Minute, time.Hour)

		tests := []struct {
			name string
			n    NewSession
			kind *apperr.Kind
		}{
			{"long label", NewSession{DeviceLabel: strings.Repeat("x", MaxDeviceLabelBytes+1)}, apperr.BoundExceeded},
			{"long user", NewSession{UserID: strings.Repeat("u", MaxUserIDBytes+1)}, apperr.BoundExceeded},
			{"idle over absolute", NewSession{Idle: 2 * time.Hour}, apperr.Validation},
			{"no reference", NewSession{Ref: SessionRef{Tag: "-"}}, apperr.Validation},
		}
		for _, tt := range tests {
			n := NewSession{Ref: sessRef(t, ""), UserID: "carol", TenantID: "acme",
				Status: SessionActive, AuthLevel: LevelBasic, Idle: time.Minute, Absolute: time.Hour}
			if tt.n.DeviceLabel != "" {
				n.DeviceLabel = tt.n.DeviceLabel
			}
			if tt.n.UserID != "" {
				n.UserID = tt.n.UserID
			}
			if tt.n.Idle != 0 {
				n.Idle = tt.n.Idle
			}
			if tt.n.Ref.Tag == "-" {
				n.Ref = SessionRef{}
			}
			if _, err := e.r.Create(ctx, n); !errors.Is(err, tt.kind) {
				t.Errorf("%s: %v", tt.name, err)
			}
		}
		for _, k := range e.keys() {
			if strings.Contains(k, "carol") {
				t.Fatalf("a refused create wrote %s", k)
			}
		}
		e.everyKeyHasTTL()
	})
}

// The idle window ends a session nobody uses; the absolute deadline ends one that is used.
func TestSessionIdleAndAbsoluteExpiry(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		// Refresh under half the window, so a loaded test machine's scheduling delays (calls are
		// 200ms apart) cannot let the busy session lapse.
		e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.RefreshFraction = 0.5 })
		ctx := context.Background()
		idleRef := e.create("", "acme", "idle", 2*time.Second, time.Hour)

		start := time.Now()
		absRef := e.create("", "acme", "busy", 2*time.Second, 3*time.Second)
		refreshed := 0
		for time.Since(start) < 2600*time.Millisecond {
			ac, err := e.r.Authorize(ctx, absRef)
			if err != nil {
				t.Fatalf("busy session refused after %v: %v", time.Since(start), err)
			}
			if ac.Refreshed {
				refreshed++
			}
			if ac.IdleExpiresAt.After(ac.AbsoluteExpiresAt) {
				t.Fatalf("idle expiry %v past the absolute deadline %v", ac.IdleExpiresAt, ac.AbsoluteExpiresAt)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if refreshed == 0 {
			t.Fatal("the idle window never slid")
		}
		if _, err := e.r.Authorize(ctx, idleRef); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("idle session still alive: %v", err)
		}
		time.Sleep(time.Until(start.Add(3300 * time.Millisecond)))
		if _, err := e.r.Authorize(ctx, absRef); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("session alive past its absolute deadline: %v", err)
		}
		if list, err := e.r.List(ctx, absRef.Tag, "acme"); err != nil || len(list) != 0 {
			t.Fatalf("expired session listed: %+v %v", list, err)
		}
	})
}

// The hot path is one command; it writes only when less than the fraction of the idle window
// is left, and never extends past the absolute deadline.
func TestSessionRefreshOnlyUnderThreshold(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", 10*time.Second, time.Hour)
		key := e.r.sessionKey(ref)
		seen := e.hget(key, sfLastSeenAt)
		time.Sleep(5 * time.Millisecond)

		setPTTL := func(ms int64) {
			if err := e.do(e.s.Client.B().Pexpire().Key(key).Milliseconds(ms).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		steps := []struct {
			name        string
			pttl        int64 // 0: leave as is
			wantRefresh bool
		}{
			{"fresh", 0, false},
			{"half left", 5000, false},
			{"just above 25%", 2700, false},
			{"under 25%", 2000, true},
			{"fresh again", 0, false},
		}
		for _, st := range steps {
			if st.pttl > 0 {
				setPTTL(st.pttl)
			}
			before := e.pttl(key)
			e.count.Reset()
			ac, err := e.r.Authorize(ctx, ref)
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if cmds := e.count.Reset(); len(cmds) != 1 || cmds[0] != "EVALSHA" {
				t.Fatalf("%s: commands %v, want one EVALSHA", st.name, cmds)
			}
			after := e.pttl(key)
			now := e.hget(key, sfLastSeenAt)
			if ac.Refreshed != st.wantRefresh {
				t.Fatalf("%s: refreshed = %v", st.name, ac.Refreshed)
			}
			if st.wantRefresh {
				if after < 9000 || now == seen {
					t.Fatalf("%s: pttl %d, lastSeen %s→%s", st.name, after, seen, now)
				}
				seen = now
			} else if after > before || now != seen {
				t.Fatalf("%s: wrote without need: pttl %d→%d, lastSeen %s→%s", st.name, before, after, seen, now)
			}
		}
		if n := e.metric("hashgate_repo_events", sessAttr("event", "ttl_refresh")); n != 1 {
			t.Fatalf("ttl_refresh events = %d, want 1", n)
		}

		// Never past the absolute deadline: 1.5s left, idle 10s.
		abs := e.serverMs() + 1500
		if err := e.do(e.s.Client.B().Hset().Key(key).FieldValue().FieldValue(sfAbsoluteExpires, strconv.FormatInt(abs, 10)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		setPTTL(300)
		ac, err := e.r.Authorize(ctx, ref)
		if err != nil || !ac.Refreshed {
			t.Fatalf("near the deadline: %+v %v", ac, err)
		}
		if p := e.pttl(key); p > 1500 || p < 1000 {
			t.Fatalf("pttl %d extends past the absolute deadline", p)
		}
	})
}

func TestSessionRotate(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := e.create("", "acme", "alice", time.Hour, 2*time.Hour)
		before, _ := e.r.Authorize(ctx, ref)
		if _, err := e.r.StartChallenge(ctx, MFAChallenge{Ref: ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		next := SessionRef{Tag: ref.Tag, Part: sessPart(t)}
		if _, err := e.r.Rotate(ctx, ref, "globex", next); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("rotate by another tenant: %v", err)
		}
		got, err := e.r.Rotate(ctx, ref, "acme", next)
		if err != nil || got.Ref != next || got.Status != SessionMFARequired || got.AuthLevel != LevelBasic {
			t.Fatalf("rotate: %+v %v", got, err)
		}
		if !got.AbsoluteExpiresAt.Equal(before.AbsoluteExpiresAt) || got.IdleExpiresAt.After(before.IdleExpiresAt.Add(time.Second)) {
			t.Fatalf("deadlines changed: %+v vs %+v", got, before)
		}
		if _, err := e.r.Authorize(ctx, ref); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("old token still works: %v", err)
		}
		if ac, err := e.r.Authorize(ctx, next); err != nil || ac.UserID != "alice" ||
			!ac.LastRotatedAt.Equal(got.LastRotatedAt) || !ac.LastRotatedAt.After(ac.CreatedAt.Add(-time.Millisecond)) {
			t.Fatalf("new token: %+v %v", ac, err)
		}
		if !before.LastRotatedAt.Equal(before.CreatedAt) {
			t.Fatalf("a session never rotated reports lastRotatedAt %v, want createdAt %v", before.LastRotatedAt, before.CreatedAt)
		}
		view, err := e.r.Get(ctx, next, "acme")
		if err != nil || !view.ChallengeLive {
			t.Fatalf("the pending challenge did not survive the rotation: %+v %v", view, err)
		}
		list, _ := e.r.List(ctx, ref.Tag, "acme")
		if len(list) != 1 || list[0].Ref != next {
			t.Fatalf("index not updated: %+v", list)
		}
		if _, err := e.r.Rotate(ctx, ref, "acme", SessionRef{Tag: ref.Tag, Part: sessPart(t)}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("rotating the dead reference: %v", err)
		}
		e.everyKeyHasTTL()
	})
}

func TestSessionRevokeAll(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		tag := sessRand(t, 9)
		type sess struct {
			ref SessionRef
		}
		var all []sess
		for range 4 {
			r := e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
			all = append(all, sess{r})
		}
		for _, x := range all[:2] {
			if _, err := e.r.StartChallenge(ctx, MFAChallenge{Ref: x.ref, Tenant: "acme", ID: sessRand(t, 16), CodeMAC: "m", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
		other := e.create("", "acme", "bob", time.Hour, 2*time.Hour)
		// A crashed non-atomic attempt would leave an index member without its hash: the
		// script must cope and count only live sessions.
		if err := e.do(e.s.Client.B().Del().Key(e.r.sessionKey(all[3].ref)).Build()).Error(); err != nil {
			t.Fatal(err)
		}

		n, err := e.r.RevokeAll(ctx, tag, all[0].ref.Part)
		if err != nil || n != 2 {
			t.Fatalf("revoke all except one: %d %v", n, err)
		}
		if _, err := e.r.Authorize(ctx, all[0].ref); err != nil {
			t.Fatalf("the kept session: %v", err)
		}
		for _, x := range all[1:] {
			if _, err := e.r.Authorize(ctx, x.ref); !errors.Is(err, apperr.NotFound) {
				t.Fatalf("revoked session still works: %v", err)
			}
		}
		if _, err := e.r.Authorize(ctx, other); err != nil {
			t.Fatalf("another user's session was touched: %v", err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 1 {
			t.Fatalf("revoke all: %d %v", n, err)
		}
		if n, err := e.r.RevokeAll(ctx, tag, ""); err != nil || n != 0 {
			t.Fatalf("revoke all again: %d %v", n, err)
		}
		// Nothing usable is left under the user's tag: no session, no index, no challenge.
		for _, k := range e.keys() {
			if strings.Contains(k, "{"+tag+"}") {
				t.Fatalf("left behind: %s", k)
			}
		}
		e.everyKeyHasTTL()
	})
}

// A hash missing a required field, or holding a malformed one, is refused, counted and logged
// by field name only; a schema-1 hash is read with the default idle timeout.
func TestSessionCorruptAndOldSchema(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		write := func(ref SessionRef, kv ...string) {
			c := e.s.Client.B().Hset().Key(e.r.sessionKey(ref)).FieldValue()
			for i := 0; i+1 < len(kv); i += 2 {
				c = c.FieldValue(kv[i], kv[i+1])
			}
			if err := e.do(c.Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if err := e.do(e.s.Client.B().Pexpire().Key(e.r.sessionKey(ref)).Milliseconds(60_000).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		now := e.serverMs()
		abs, seen := strconv.FormatInt(now+3_600_000, 10), strconv.FormatInt(now, 10)
		tests := []struct {
			name string
			kv   []string
			bad  string
		}{
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
			_, err := e.r.Authorize(ctx, ref)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if p := e.pttl(e.r.sessionKey(ref)); p > 60_000 {
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
		if err := e.do(e.s.Client.B().Set().Key(e.r.sessionKey(wrong)).Value("x").Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.Authorize(ctx, wrong); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("wrong type: %v", err)
		}
		// The deliberately wrong-typed key goes: the keyspace audit after the suite checks
		// every key left against docs/KEYS.md.
		if err := e.do(e.s.Client.B().Del().Key(e.r.sessionKey(wrong)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if n := e.metric("hashgate_repo_script_errors", sessAttr("script", "session_authorize")); n != 1 {
			t.Fatalf("script errors counted = %d", n)
		}

		old := sessRef(t, "")
		write(old, "tokenHash", sessRand(t, 32), "userId", "u1", "tenantId", "acme", "status", "ACTIVE", "authLevel", "BASIC",
			"absoluteExpiresAtMs", abs, "createdAtMs", "1", "lastSeenAtMs", "1", "schemaVersion", "1")
		if err := e.do(e.s.Client.B().Pexpire().Key(e.r.sessionKey(old)).Milliseconds(1000).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		ac, err := e.r.Authorize(ctx, old)
		if err != nil || ac.Outcome != OldSchema || !ac.Refreshed || ac.Status != SessionActive || ac.AuthLevel != LevelBasic {
			t.Fatalf("schema 1: %+v %v", ac, err)
		}
		if p := e.pttl(e.r.sessionKey(old)); p < 29*60*1000 {
			t.Fatalf("schema 1 refreshed to %dms, want the default idle", p)
		}
		if v, err := e.r.Get(ctx, old, "acme"); err != nil || v.SchemaVersion != 1 || v.Status != SessionActive || v.AuthLevel != LevelBasic {
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
			write(ref, append(sh.kv, "userId", "u2", "tenantId", "acme",
				"absoluteExpiresAtMs", abs, "createdAtMs", seen, "updatedAtMs", seen, "lastSeenAtMs", seen, "schemaVersion", "2")...)
			if err := e.do(e.s.Client.B().Pexpire().Key(e.r.sessionKey(ref)).Milliseconds(1000).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			ac, err := e.r.Authorize(ctx, ref)
			if err != nil || ac.Outcome != Found || !ac.Refreshed || ac.FailedMFAAttempts != 0 ||
				ac.LastRotatedAt.UnixMilli() != now || ac.Status != SessionActive || ac.AuthLevel != LevelBasic {
				t.Fatalf("%s: %+v %v", sh.name, ac, err)
			}
			if p := e.pttl(e.r.sessionKey(ref)); p < sh.min || p > sh.max {
				t.Fatalf("%s: refreshed to %dms, want %d..%d", sh.name, p, sh.min, sh.max)
			}
			if v, err := e.r.Get(ctx, ref, "acme"); err != nil || v.SchemaVersion != SchemaVersion || v.LastRotatedAt.UnixMilli() != now ||
				v.Status != SessionActive || v.AuthLevel != LevelBasic {
				t.Fatalf("%s view: %+v %v", sh.name, v, err)
			}
		}
	})
}
