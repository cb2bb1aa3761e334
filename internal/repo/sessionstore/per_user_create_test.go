package sessionstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// A plain session in the per-user layout is one field of its own in the user's hash, its live
// marker "<createdAtMs>.<verifierMac>" (".<absoluteExpiresAtMs>" after them when the deadline
// is not the implicit one), beside the user's five fields; a second session of the user adds its
// own fields to the same key. Every field of
// a session carries the idle window as its field TTL, and the key outlives the latest absolute
// deadline. (Session events off: the form a user's hash has once the relay has copied them,
// eventstore's TestRelayEmptiesTheUserHash.)
func TestSessionCreatePerUserLayout(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, s *store.Store, _ *sessEnv) {
		e := newSessEnv(t, s, testredis.Prefix(t), func(o *SessionOptions) { o.Layout, o.Outbox = LayoutPerUser, events.SessionEventsOff })
		ctx := context.Background()
		tag := sessRand(t, 9)
		a := sessRef(t, tag)
		if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: a, UserID: "ann", TenantID: "acme", Idle: ImplicitIdle, Absolute: 2 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		got, err := e.do(e.s.Client.B().Hgetall().Key(e.r.userKey(tag)).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		created, rest, _ := strings.Cut(got[partField(a.Part, fieldLive)], liveSep)
		if got[fieldUserID] != "ann" || got[fieldTenantID] != "acme" || got[fieldCreatedAt] != created ||
			got[fieldUpdatedAt] != created || got[fieldSchemaVersion] == "" || len(got) != 6 ||
			rest != testMAC+liveSep+strconv.FormatInt(sessAtoi(created)+2*time.Hour.Milliseconds(), 10) {
			t.Fatalf("user's hash after one plain create: %v", got)
		}
		// With the implicit absolute timeout the marker holds no deadline.
		d := sessRef(t, "")
		if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: d, UserID: "dan", TenantID: "acme", Idle: ImplicitIdle, Absolute: ImplicitAbsolute}); err != nil {
			t.Fatal(err)
		}
		if v := e.hget(e.r.userKey(d.Tag), partField(d.Part, fieldLive)); !strings.HasSuffix(v, liveSep+testMAC) || strings.Count(v, liveSep) != 1 {
			t.Fatalf("live marker with the implicit deadline: %q", v)
		}
		if v, err := e.r.Get(ctx, d, "acme"); err != nil || !v.AbsoluteExpiresAt.Equal(v.CreatedAt.Add(ImplicitAbsolute)) {
			t.Fatalf("implicit deadline read back: %+v %v", v, err)
		}
		e.must(e.s.Client.B().Del().Key(e.r.userKey(d.Tag)).Build())
		if keys := e.sessionKeys(); len(keys) != 1 {
			t.Fatalf("keys %v, want the user's hash alone", keys)
		}
		if p := e.sessPTTL(a); p <= 29*60*1000 || p > 30*60*1000 {
			t.Fatalf("session's field TTL %d ms, want the implicit idle 30 minutes", p)
		}
		if p := e.pttl(e.r.userKey(tag)); p <= 119*60*1000 || p > 120*60*1000 {
			t.Fatalf("key TTL %d ms, want the absolute 2h", p)
		}
		time.Sleep(3 * time.Millisecond)
		c := sessRef(t, tag)
		if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: c, UserID: "ann", TenantID: "acme", DeviceLabel: "phone",
			Status: session.MFARequired, AuthLevel: session.LevelBasic, LoginPending: true, Idle: time.Minute, Absolute: 3 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		st := e.sessStored(c)
		if st[fieldCreatedAt] == "" || st[fieldDeviceLabel] != "phone" || st[fieldStatus] != session.MFARequired || st[fieldLoginPending] != "1" ||
			st[fieldIdleTimeout] != "60000" || st[fieldAuthLevel] != "" {
			t.Fatalf("second session's stored fields: %v", st)
		}
		ttls, err := e.do(e.s.Client.B().Arbitrary("HPTTL").Keys(e.r.userKey(tag)).Args("FIELDS", "5",
			partField(c.Part, fieldLive), partField(c.Part, fieldLoginPending), partField(c.Part, fieldDeviceLabel),
			partField(c.Part, fieldStatus), fieldUserID).Build()).AsIntSlice()
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range ttls[:4] {
			if p <= 0 || p > 60*1000 {
				t.Fatalf("field %d of the second session: TTL %d, want the idle minute", i, p)
			}
		}
		if ttls[4] != -1 {
			t.Fatalf("userId has a field TTL (%d): the user's fields have none", ttls[4])
		}
		if p := e.pttl(e.r.userKey(tag)); p <= 179*60*1000 {
			t.Fatalf("key TTL %d ms, want raised to the later absolute deadline (3h)", p)
		}
		// A create with the id of a live session is refused.
		if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: a, UserID: "ann", TenantID: "acme", Idle: time.Hour, Absolute: 2 * time.Hour}); err == nil {
			t.Fatal("create over a live session's id succeeded")
		}
		e.everyKeyHasTTL()
	})
}

// Every per-user write is one round trip of one command, the script: for a user's first session
// (no hash yet), a second one, and a revoke of a session already gone.
func TestSessionPerUserOneRoundTrip(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, b testredis.Backend, s *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		one := []string{"EVALSHA"}
		for i := range 2 {
			e.count.Reset()
			ref := sessRef(t, tag)
			if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "ann", TenantID: "acme", Idle: ImplicitIdle, Absolute: 2 * time.Hour}); err != nil {
				t.Fatal(err)
			}
			if cmds := e.count.Reset(); !slices.Equal(cmds, one) {
				t.Fatalf("create %d sent %v, want %v in one round trip", i+1, cmds, one)
			}
			if _, err := e.r.Revoke(ctx, ref, "acme"); err != nil {
				t.Fatal(err)
			}
			e.count.Reset()
			if ok, err := e.r.Revoke(ctx, ref, "acme"); ok || err != nil {
				t.Fatalf("second revoke: %v %v", ok, err)
			}
			if cmds := slices.DeleteFunc(e.count.Reset(), func(c string) bool { return c == "ROLE" }); !slices.Equal(cmds, one) {
				t.Fatalf("revoke of a session already gone sent %v, want %v in one round trip", cmds, one)
			}
		}
	})
}
