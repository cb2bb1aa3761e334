package sessionstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// TestSessionGroupsStoredAndReplaced: a session created with groups answers them on every read
// (create, the hot path, the view, Get) and keeps them through rotation; SetGroups replaces
// them in place — the session's TTL (and in the per-user layout every field's) unchanged —,
// removes them with an empty list, and refuses another tenant's or an unknown session without
// writing; the bounds are checked before any write.
func TestSessionGroupsStoredAndReplaced(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		ref := sessRef(t, "")
		c, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme", Status: session.Active,
			AuthLevel: session.LevelBasic, Groups: []string{"admins", "staff"}, Idle: 10 * time.Minute, Absolute: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"admins", "staff"}
		if !slices.Equal(c.Groups, want) || e.sessGet(ref, fieldGroups) != "admins,staff" {
			t.Fatalf("created with %v, stored %q", c.Groups, e.sessGet(ref, fieldGroups))
		}
		mac := testMAC
		check := func(what string, want []string) {
			t.Helper()
			hot, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: mac, Fresh: true})
			if err != nil || !slices.Equal(hot.Groups, want) {
				t.Fatalf("%s: hot path %v %v, want %v", what, hot, err, want)
			}
			view, err := e.r.Authorize(ctx, ref, session.AuthorizeOptions{VerifierMAC: mac, View: true, Fresh: true})
			if err != nil || !slices.Equal(view.Groups, want) {
				t.Fatalf("%s: view %v %v, want %v", what, view, err, want)
			}
			got, err := e.r.Get(ctx, ref, "acme")
			if err != nil || !slices.Equal(got.Groups, want) {
				t.Fatalf("%s: get %v %v, want %v", what, got, err, want)
			}
		}
		check("created", want)

		before := e.sessPTTL(ref)
		v, err := e.r.SetGroups(ctx, ref, "acme", []string{"ops"})
		if err != nil || !slices.Equal(v.Groups, []string{"ops"}) {
			t.Fatalf("set groups: %+v %v", v, err)
		}
		if after := e.sessPTTL(ref); after > before || after < before-2000 {
			t.Fatalf("the session's idle window moved: %d ms before, %d ms after", before, after)
		}
		for name, ttl := range e.sessFieldTTLs(ref) { // per user: the fields written keep the session's TTL
			if ttl <= 0 || ttl > before {
				t.Fatalf("field %s's TTL is %d ms, want the session's (%d ms)", name, ttl, before)
			}
		}
		check("replaced", []string{"ops"})
		e.everyKeyHasTTL()

		// Another tenant's session answers as an unknown one and is left untouched.
		if _, err := e.r.SetGroups(ctx, ref, "other", []string{"evil"}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("another tenant: %v, want not found", err)
		}
		unknown := sessRef(t, ref.Tag)
		if _, err := e.r.SetGroups(ctx, unknown, "acme", []string{"x"}); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("unknown session: %v, want not found", err)
		}
		if e.sessGet(unknown, fieldGroups) != "" {
			t.Fatal("a refused SetGroups wrote the unknown session's groups")
		}
		check("after refusals", []string{"ops"})

		// Bounds, before any write.
		many := make([]string, session.MaxGroups+1)
		for i := range many {
			many[i] = "g" + strings.Repeat("x", i)
		}
		if _, err := e.r.SetGroups(ctx, ref, "acme", many); !errors.Is(err, apperr.BoundExceeded) {
			t.Fatalf("%d groups: %v, want bound exceeded", len(many), err)
		}
		for _, bad := range []string{"", "a,b", "a b", strings.Repeat("g", session.MaxGroupBytes+1), "é"} {
			if _, err := e.r.SetGroups(ctx, ref, "acme", []string{bad}); !errors.Is(err, apperr.Validation) {
				t.Fatalf("group %q: %v, want validation", bad, err)
			}
		}
		check("after bad input", []string{"ops"})

		// Rotation keeps the groups.
		mac = macOf("rotated")
		if _, err := e.r.Rotate(ctx, ref, "acme", mac); err != nil {
			t.Fatal(err)
		}
		check("rotated", []string{"ops"})

		// An empty list removes the field.
		if v, err := e.r.SetGroups(ctx, ref, "acme", nil); err != nil || v.Groups != nil {
			t.Fatalf("clear: %+v %v", v, err)
		}
		if _, ok := e.sessStored(ref)[fieldGroups]; ok {
			t.Fatal("an empty list left the groups field")
		}
		check("cleared", nil)
		e.everyKeyHasTTL()
	})
}

// TestSessionGroupsBoundOnCreate: the largest groups a session may hold are stored whole; one
// more group is refused before anything is written.
func TestSessionGroupsBoundOnCreate(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSessEnv(t, s, prefix, nil)
		ctx := context.Background()
		full := make([]string, session.MaxGroups)
		for i := range full {
			full[i] = strings.Repeat(string(rune('a'+i%26)), session.MaxGroupBytes-2) + string(rune('A'+i/26)) + "x"
		}
		rec := session.Record{VerifierMAC: testMAC, Ref: sessRef(t, ""), UserID: strings.Repeat("u", session.MaxUserIDBytes), TenantID: strings.Repeat("t", session.MaxTenantBytes),
			Status: session.Active, AuthLevel: session.LevelMFA, DeviceLabel: strings.Repeat("d", session.MaxDeviceLabelBytes),
			IPHash: sessRand(t, 16), UserAgentHash: sessRand(t, 16), Groups: full, Idle: 10 * time.Minute, Absolute: time.Hour}
		if _, err := e.r.Create(ctx, rec); err != nil {
			t.Fatalf("the largest session: %v", err)
		}
		got, err := e.r.Authorize(ctx, rec.Ref, session.AuthorizeOptions{VerifierMAC: testMAC, Fresh: true})
		if err != nil || !slices.Equal(got.Groups, full) {
			t.Fatalf("hot read of %d groups: %d %v", len(full), len(got.Groups), err)
		}
		over := rec
		over.Ref, over.Groups = sessRef(t, ""), append(slices.Clone(full), "one-more")
		if _, err := e.r.Create(ctx, over); !errors.Is(err, apperr.BoundExceeded) {
			t.Fatalf("%d groups: %v, want bound exceeded", len(over.Groups), err)
		}
		if n := len(e.sessStored(over.Ref)); n != 0 {
			t.Fatalf("a refused create wrote %d fields", n)
		}
	})
}

// TestRotateAndVerifyAnswerGroups: the session a rotation or a successful MFA verify answers
// carries the groups the session keeps (and none for a session without), as every other
// session view does.
func TestRotateAndVerifyAnswerGroups(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		for _, layout := range []SessionLayout{LayoutPerSession, LayoutPerUser} {
			if Hosts(s.Caps, layout) != nil {
				continue
			}
			e := newSessEnv(t, s, prefix, func(o *SessionOptions) { o.Layout = layout })
			for _, groups := range [][]string{{"admins", "staff"}, nil} {
				ref := sessRef(t, "")
				if _, err := e.r.Create(ctx, session.Record{VerifierMAC: testMAC, Ref: ref, UserID: "alice", TenantID: "acme", Status: session.Active,
					AuthLevel: session.LevelBasic, Groups: groups, Idle: 10 * time.Minute, Absolute: time.Hour}); err != nil {
					t.Fatal(err)
				}
				next := ref
				v, err := e.r.Rotate(ctx, ref, "acme", macOf("rotated"))
				if err != nil || !slices.Equal(v.Groups, groups) {
					t.Fatalf("%s layout: rotate answered groups %v (%v), want %v", e.sessLayoutName(), v.Groups, err, groups)
				}
				id := sessRand(t, 16)
				e.challenge(next, "acme", id, "mac", 5*time.Minute)
				res, _, err := e.verify(next, "acme", id, "mac")
				if err != nil || res.Outcome != session.VerifyOK || !slices.Equal(res.Session.Groups, groups) {
					t.Fatalf("%s layout: verify answered %+v (%v), want groups %v", e.sessLayoutName(), res, err, groups)
				}
			}
		}
	})
}
