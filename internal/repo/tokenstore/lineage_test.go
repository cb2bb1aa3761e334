package tokenstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// TestTokensLineage: a minted token is linked to its issuer in the same script that writes it
// (children set with the issuer's TTL, lineage fields, the root's count); a create that its
// issuer cannot sanction (outlives it, issuer revoked or another tenant's, lineage full, too
// deep) writes nothing; a revocation revokes the whole subtree at once, names the ancestor and
// leaves unrelated tokens alone; the children sets stay until they expire, so a lineage lists
// its revoked descendants too. Every token records its ancestors, root first.
func TestTokensLineage(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 0)
		r.maxLineage = 4
		tag := r.tag("acme")
		now := time.Now()
		child := func(parent tokens.Token, ttl time.Duration) tokens.Token {
			x := newToken("acme", now, ttl)
			x.ParentID = parent.ID
			return x
		}
		mustCreate := func(x tokens.Token) tokens.Token {
			t.Helper()
			if err := r.Create(ctx, x); err != nil {
				t.Fatalf("create: %v", err)
			}
			return x
		}
		a := mustCreate(newToken("acme", now, time.Hour))
		sibling := mustCreate(newToken("acme", now, time.Hour)) // another root: untouched by A's revocation
		b := mustCreate(child(a, 30*time.Minute))
		c := mustCreate(child(b, 10*time.Minute))
		d := mustCreate(child(a, 20*time.Minute))
		got, err := r.Get(ctx, "acme", c.ID)
		if err != nil || got.ParentID != b.ID || got.RootID != a.ID || got.Depth != 2 || !slices.Equal(got.Ancestors, []string{a.ID, b.ID}) ||
			!got.Below(a.ID) || !got.Below(b.ID) || !got.Below(c.ID) || got.Below(d.ID) {
			t.Fatalf("C's lineage: %+v, %v", got, err)
		}
		if got, _ := r.Get(ctx, "acme", a.ID); got.ParentID != "" || got.RootID != "" || got.Depth != 0 || len(got.Ancestors) != 0 {
			t.Fatalf("root's lineage: %+v", got)
		}
		kids, err := s.Client.Do(ctx, s.Client.B().Smembers().Key(r.kidsKey(tag, a.ID)).Build()).AsStrSlice()
		slices.Sort(kids)
		if want := []string{b.ID, d.ID}; err != nil || !slices.Equal(kids, sortedCopy(want)) {
			t.Fatalf("A's children %v, want %v (%v)", kids, want, err)
		}
		if ttl, parent := tokenPTTL(t, s, r.kidsKey(tag, a.ID)), tokenPTTL(t, s, r.hashKey(tag, a.ID)); ttl <= 0 || ttl > parent+time.Second || ttl < parent-5*time.Second {
			t.Fatalf("children set TTL %v, issuer's hash %v", ttl, parent)
		}

		// Refused creates write nothing.
		before := testredis.KeyCount(t, s, prefix)
		other := newToken("globex", now, time.Minute)
		other.ParentID = a.ID
		tooDeep := child(c, time.Minute)
		for name, tt := range map[string]struct {
			tok  tokens.Token
			want error
		}{
			"outlives its issuer":      {child(b, 31*time.Minute), tokens.ErrOutlivesIssuer},
			"issuer of another tenant": {other, tokens.ErrIssuerGone},
			"unknown issuer":           {tokens.Token{ID: auth.NewTokenID(now), Tenant: "acme", Subject: "s", Type: "service", Scopes: []string{"x"}, IssuedAt: now, ExpiresAt: now.Add(time.Minute), ParentID: auth.NewTokenID(now)}, tokens.ErrIssuerGone},
		} {
			if err := r.Create(ctx, tt.tok); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %v", name, err, tt.want)
			}
		}
		if n := testredis.KeyCount(t, s, prefix); n != before {
			t.Fatalf("refused creates changed the key count %d → %d", before, n)
		}
		mustCreate(tooDeep) // the 4th token under A: the lineage is now full
		if err := r.Create(ctx, child(a, time.Minute)); !errors.Is(err, tokens.ErrLineageFull) {
			t.Fatalf("5th token under A: %v", err)
		}

		// Revoke B: C and its child go with it, A, D and the sibling stay.
		res, cascaded, err := r.Revoke(ctx, "acme", b.ID, "rotated")
		slices.Sort(cascaded)
		if err != nil || res != tokens.Revoked || !slices.Equal(cascaded, sortedCopy([]string{c.ID, tooDeep.ID})) {
			t.Fatalf("revoke B = %v %v %v", res, cascaded, err)
		}
		for _, x := range []tokens.Token{c, tooDeep} {
			st, err := r.State(ctx, "acme", x.ID, 0)
			got, _ := r.Get(ctx, "acme", x.ID)
			if err != nil || !st.Revoked || got.RevokedAt.IsZero() || got.RevokedReason == "" || !strings.Contains(got.RevokedReason, b.ID) {
				t.Fatalf("descendant %s after B's revocation: %+v %+v %v", x.ID, st, got, err)
			}
		}
		for _, x := range []tokens.Token{a, d, sibling} {
			if st, err := r.State(ctx, "acme", x.ID, 0); err != nil || st.Revoked {
				t.Fatalf("%s revoked with B: %+v %v", x.ID, st, err)
			}
		}
		// Revoke A: D goes now; B's subtree was revoked already (and is not counted again).
		res, cascaded, err = r.Revoke(ctx, "acme", a.ID, "leaked")
		if err != nil || res != tokens.Revoked || !slices.Equal(cascaded, []string{d.ID}) {
			t.Fatalf("revoke A = %v %v %v", res, cascaded, err)
		}
		for _, id := range []string{a.ID, b.ID, c.ID} {
			if ttl := tokenPTTL(t, s, r.kidsKey(tag, id)); ttl <= 0 {
				t.Fatalf("children set of %s: TTL %v after the revocation", id, ttl)
			}
		}
		for root, want := range map[string][]string{a.ID: {a.ID, b.ID, c.ID, d.ID, tooDeep.ID}, b.ID: {b.ID, c.ID, tooDeep.ID}, sibling.ID: {sibling.ID}} {
			var ids []string
			for cursor := ""; ; {
				page, next, err := r.ListLineage(ctx, "acme", root, cursor, 2)
				if err != nil {
					t.Fatalf("list lineage: %v", err)
				}
				for _, x := range page {
					ids = append(ids, x.ID)
				}
				if cursor = next; next == "" {
					break
				}
			}
			want = sortedCopy(want)
			slices.Reverse(want)
			if !slices.Equal(ids, want) {
				t.Fatalf("lineage of %s lists %v, want %v newest first", root, ids, want)
			}
		}
		if page, _, err := r.ListLineage(ctx, "globex", a.ID, "", 10); err != nil || len(page) != 0 {
			t.Fatalf("another tenant lists A's lineage: %v %v", page, err)
		}
		if st, _ := r.State(ctx, "acme", sibling.ID, 0); st.Revoked {
			t.Fatal("an unrelated root was revoked")
		}
		if err := r.Create(ctx, child(d, time.Minute)); !errors.Is(err, tokens.ErrIssuerGone) {
			t.Fatalf("a revoked issuer minted: %v", err)
		}
	})
}

// TestTokenRevokeRetriesForAChildItWasNotGiven: the revoke script refuses, changing nothing,
// when a children set holds an id the caller did not pass (minted since the caller's read).
func TestTokenRevokeRetriesForAChildItWasNotGiven(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 0)
		tag := r.tag("acme")
		now := time.Now()
		a := newToken("acme", now, time.Hour)
		b := newToken("acme", now, time.Minute)
		b.ParentID = a.ID
		for _, x := range []tokens.Token{a, b} {
			if err := r.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		reply, err := scriptRevoke.Exec(ctx, s.Client, []string{r.hashKey(tag, a.ID), r.kidsKey(tag, a.ID), r.Keys.EventStream(tag)},
			[]string{"acme", "x", "y", events.Envelope(ctx, "acme", r.retention), a.ID}).AsStrSlice()
		if err != nil || !slices.Equal(reply, []string{"RETRY"}) {
			t.Fatalf("reply %v, %v", reply, err)
		}
		if st, _ := r.State(ctx, "acme", a.ID, 0); st.Revoked {
			t.Fatal("a refused revocation revoked the token")
		}
		if n := streamLen(t, s, r.Keys.EventStream(tag)); n != 2 {
			t.Fatalf("%d events after two creates and a refused revocation, want 2", n)
		}
	})
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
