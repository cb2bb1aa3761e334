package sessionstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// stored returns field's value in the hash at key and whether the hash holds the field.
func (e *sessEnv) stored(key, field string) (string, bool) {
	e.t.Helper()
	vals, err := e.do(e.s.Client.B().Hmget().Key(key).Field(field).Build()).ToArray()
	if err != nil || len(vals) != 1 {
		e.t.Fatalf("hmget %s: %v", field, err)
	}
	if vals[0].IsNil() {
		return "", false
	}
	v, err := vals[0].ToString()
	if err != nil {
		e.t.Fatal(err)
	}
	return v, true
}

// status and authLevel are stored only when they differ from ACTIVE and BASIC; every reader
// (the hot path with and without the client-side cache, the full view, the device list,
// rotation) reports the default when the field is absent, and the transitions away from the
// defaults (MFA challenge, step-up) still write them.
func TestSessionStatusAndLevelDefaults(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		for _, cached := range []bool{false, true} {
			if cached && !s.Caps.ClientCache {
				continue
			}
			e := newSessEnv(t, s, prefix, func(o *SessionOptions) {
				if cached {
					o.CacheTTL = time.Minute
				}
			})
			ctx := context.Background()
			tag := sessRand(t, 9)
			create := func(status, level string) session.Ref {
				t.Helper()
				ref := sessRef(t, tag)
				if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme", Status: status,
					AuthLevel: level, Idle: time.Hour, Absolute: 2 * time.Hour}); err != nil {
					t.Fatal(err)
				}
				return ref
			}
			// want checks what the hash stores ("" for absent) and what every read reports.
			want := func(name string, ref session.Ref, storedStatus, storedLevel, status, level string) {
				t.Helper()
				for _, f := range []struct{ name, want string }{{fieldStatus, storedStatus}, {fieldAuthLevel, storedLevel}} {
					v, ok := e.stored(e.sessKey(ref), e.sessField(ref, f.name))
					if f.want == "" && ok || f.want != "" && v != f.want {
						t.Fatalf("%s (cached %v): %s stored as %q (present %v), want %q", name, cached, f.name, v, ok, f.want)
					}
				}
				// A cached read learns of a write made on another connection (a durable write's)
				// from Redis's invalidation, which may still be on its way: it must converge
				// within moments (the session service reads fresh after its own writes).
				ac, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				for end := time.Now().Add(time.Second); cached && err == nil && (ac.Status != status || ac.AuthLevel != level) && time.Now().Before(end); {
					time.Sleep(5 * time.Millisecond)
					ac, err = e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: testMAC, View: true})
				}
				if err != nil || ac.Status != status || ac.AuthLevel != level || repo.Outcome(ac.Outcome) != repo.Found {
					t.Fatalf("%s (cached %v): authorize %+v %v", name, cached, ac, err)
				}
				v, err := e.r.Get(ctx, ref, "acme")
				if err != nil || v.Status != status || v.AuthLevel != level {
					t.Fatalf("%s (cached %v): get %+v %v", name, cached, v, err)
				}
				list, err := e.r.List(ctx, tag, "acme")
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, l := range list {
					if l.Ref == ref {
						found = l.Status == status && l.AuthLevel == level
					}
				}
				if !found {
					t.Fatalf("%s (cached %v): list %+v", name, cached, list)
				}
			}

			plain := create(session.Active, session.LevelBasic)
			want("plain", plain, "", "", session.Active, session.LevelBasic)
			next := plain // (a rotation keeps the reference)
			rot, err := e.r.Rotate(ctx, plain, "acme", testMAC)
			if err != nil || rot.Status != session.Active || rot.AuthLevel != session.LevelBasic {
				t.Fatalf("rotate a plain session: %+v %v", rot, err)
			}
			want("plain rotated", next, "", "", session.Active, session.LevelBasic)

			// An empty status or level is the default too (and is not written).
			want("empty", create("", ""), "", "", session.Active, session.LevelBasic)
			want("mfa required", create(session.MFARequired, session.LevelBasic), session.MFARequired, "", session.MFARequired, session.LevelBasic)
			want("mfa level", create(session.Active, session.LevelMFA), "", session.LevelMFA, session.Active, session.LevelMFA)

			// Transitions away from the defaults write them: the challenge the status, the
			// step-up both.
			ref := create(session.Active, session.LevelBasic)
			cid := sessRand(t, 16)
			e.challenge(ref, "acme", cid, "good-mac", time.Minute)
			want("challenged", ref, session.MFARequired, "", session.MFARequired, session.LevelBasic)
			res, up, err := e.verify(ref, "acme", cid, "good-mac")
			if err != nil || res.Outcome != session.VerifyOK {
				t.Fatalf("verify: %+v %v", res, err)
			}
			want("stepped up", up, session.MFAVerified, session.LevelMFA, session.MFAVerified, session.LevelMFA)

			// Existence rests on the fields every session holds (userId, tenantId, the deadline,
			// schemaVersion): a hash holding none of them is missing, not corrupt
			// (TestSessionStrayFieldsMissingPerUser: per user, Get too).
			stray := sessRef(t, tag)
			e.sessWriteRaw(stray, nil, map[string]string{fieldLastSeenAt: "1", fieldChallengeAt: "1"}, 60_000)
			if _, err := e.r.Authorize(ctx, stray, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
				t.Fatalf("a hash without the key fields (cached %v): %v", cached, err)
			}
			e.sessDelete(stray)
			e.everyKeyHasTTL()
		}
	})
}

// Per user, a session is live iff its absoluteExpiresAtMs is: other fields of its id part in
// the user's hash (which holds the user's fields) are a missing session to every read.
func TestSessionStrayFieldsMissingPerUser(t *testing.T) {
	t.Parallel()
	eachPerUser(t, func(t *testing.T, _ testredis.Backend, _ *store.Store, e *sessEnv) {
		ctx := context.Background()
		tag := sessRand(t, 9)
		e.create(tag, "acme", "alice", time.Hour, 2*time.Hour)
		stray := sessRef(t, tag)
		e.sessWriteRaw(stray, nil, map[string]string{fieldLastSeenAt: "1", fieldChallengeAt: "1"}, 60_000)
		if _, err := e.r.Authorize(ctx, stray, session.AuthorizeOptions{VerifierMAC: testMAC, View: true}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("authorize: %v", err)
		}
		if _, err := e.r.Get(ctx, stray, "acme"); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("get: %v", err)
		}
		e.sessDelete(stray)
		e.everyKeyHasTTL()
	})
}
