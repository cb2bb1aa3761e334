package tokenstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

func newStore(t *testing.T, s *store.Store, prefix string, safety time.Duration, max int) *Store {
	t.Helper()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(s, Options{Prefix: prefix, Hasher: h, SafetyWindow: safety, MaxPerTenant: max})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newToken(tenant string, now time.Time, ttl time.Duration) tokens.Token {
	return tokens.Token{ID: auth.NewTokenID(now), Tenant: tenant, Subject: "svc-a", Type: "service",
		Scopes: []string{"tokens:read", "quotes:read"}, Description: "test token",
		IssuedAt: now.Truncate(time.Second), ExpiresAt: now.Truncate(time.Second).Add(ttl)}
}

func tokenPTTL(t *testing.T, s *store.Store, key string) time.Duration {
	t.Helper()
	n, err := s.Client.Do(context.Background(), s.Client.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("tokenPTTL: %v", err)
	}
	return time.Duration(n) * time.Millisecond
}

func TestTokensCreateGetAndTTL(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		const safety = 5 * time.Minute
		r := newStore(t, s, prefix, safety, 0)
		now := time.Now()
		tok := newToken("acme", now, time.Hour)
		if err := r.Create(ctx, tok); err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := r.Get(ctx, "acme", tok.ID)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.Tenant != "acme" || got.Subject != "svc-a" || got.Type != "service" || !slices.Equal(got.Scopes, tok.Scopes) ||
			got.Description != "test token" || !got.ExpiresAt.Equal(tok.ExpiresAt) || !got.IssuedAt.Equal(tok.IssuedAt) ||
			got.Revoked || got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Fatalf("get = %+v", got)
		}
		// Key TTL = expiry − now + safety window, set with the write.
		want := time.Until(tok.ExpiresAt) + safety
		if d := tokenPTTL(t, s, r.hashKey(r.tag("acme"), tok.ID)); d > want+time.Second || d < want-5*time.Second {
			t.Fatalf("metadata TTL %v, want about %v", d, want)
		}
		for _, k := range r.indexKeys(r.tag("acme")) {
			if d := tokenPTTL(t, s, k); d > want+time.Second || d < want-5*time.Second {
				t.Fatalf("index %s TTL %v, want about %v", k, d, want)
			}
		}
		fields, err := s.Client.Do(ctx, s.Client.B().Hlen().Key(r.hashKey(r.tag("acme"), tok.ID)).Build()).AsInt64()
		if err != nil || fields > fieldsMax {
			t.Fatalf("hash has %d fields (max %d), %v", fields, fieldsMax, err)
		}
		if _, err := r.Get(ctx, "other", tok.ID); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("other tenant's get: %v", err)
		}
		st, err := r.State(ctx, "acme", tok.ID, 0)
		if err != nil || st.Tenant != "acme" || st.Scope != "tokens:read quotes:read" || st.Revoked || st.ExpiresAtMs != tok.ExpiresAt.UnixMilli() {
			t.Fatalf("state = %+v, %v", st, err)
		}
		// A longer-lived token stretches the index TTL; a shorter one never shrinks it.
		long := newToken("acme", now, 2*time.Hour)
		short := newToken("acme", now, 10*time.Minute)
		for _, x := range []tokens.Token{long, short} {
			if err := r.Create(ctx, x); err != nil {
				t.Fatalf("create: %v", err)
			}
		}
		want = time.Until(long.ExpiresAt) + safety
		for _, k := range r.indexKeys(r.tag("acme")) {
			if d := tokenPTTL(t, s, k); d > want+time.Second || d < want-5*time.Second {
				t.Fatalf("index %s TTL %v after a longer token, want about %v", k, d, want)
			}
		}
	})
}

func TestTokensRevoke(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 0)
		tok := newToken("acme", time.Now(), time.Hour)
		if err := r.Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
		before := tokenPTTL(t, s, r.hashKey(r.tag("acme"), tok.ID))
		// Another tenant cannot revoke it, and learns nothing: the answer is an unknown id's.
		if res, _, err := r.Revoke(ctx, "other", tok.ID, "x"); err != nil || res != tokens.RevokeUnknown {
			t.Fatalf("other tenant's revoke: %v, %v", res, err)
		}
		if got, err := r.Get(ctx, "acme", tok.ID); err != nil || got.Revoked {
			t.Fatalf("another tenant revoked the token (or it cannot be read: %v)", err)
		}
		res, _, err := r.Revoke(ctx, "acme", tok.ID, "leaked")
		if err != nil || res != tokens.Revoked {
			t.Fatalf("revoke = %v, %v", res, err)
		}
		first, err := r.Get(ctx, "acme", tok.ID)
		if err != nil || !first.Revoked || first.RevokedReason != "leaked" || first.RevokedAt.IsZero() {
			t.Fatalf("after revoke: %+v, %v", first, err)
		}
		res, _, err = r.Revoke(ctx, "acme", tok.ID, "again")
		if err != nil || res != tokens.AlreadyRevoked {
			t.Fatalf("second revoke = %v, %v", res, err)
		}
		second, _ := r.Get(ctx, "acme", tok.ID)
		if second.RevokedReason != "leaked" || !second.RevokedAt.Equal(first.RevokedAt) {
			t.Fatalf("second revoke changed the record: %+v", second)
		}
		// The key keeps its TTL (introspection answers active:false until it expires).
		if d := tokenPTTL(t, s, r.hashKey(r.tag("acme"), tok.ID)); d <= 0 || d > before {
			t.Fatalf("TTL after revoke %v (before %v)", d, before)
		}
		st, err := r.State(ctx, "acme", tok.ID, 0)
		if err != nil || !st.Revoked {
			t.Fatalf("state after revoke: %+v, %v", st, err)
		}
		// Unknown ids are a no-op that creates nothing.
		n := testredis.KeyCount(t, s, prefix)
		unknown := auth.NewTokenID(time.Now())
		if res, _, err := r.Revoke(ctx, "acme", unknown, ""); err != nil || res != tokens.RevokeUnknown {
			t.Fatalf("unknown revoke = %v, %v", res, err)
		}
		if res, _, err := r.Revoke(ctx, "acme", "not-an-id{x}", ""); err != nil || res != tokens.RevokeUnknown {
			t.Fatalf("malformed id revoke = %v, %v", res, err)
		}
		if got := testredis.KeyCount(t, s, prefix); got != n {
			t.Fatalf("unknown revoke wrote keys: %d → %d", n, got)
		}
	})
}

func TestTokensListPagesWithoutGapsOrDuplicates(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 0)
		base := time.Now()
		var want []string
		for i := range 250 {
			// Some ids share a millisecond (random order within it), most do not.
			tok := newToken("acme", base.Add(time.Duration(i/3)*time.Millisecond), time.Hour)
			if err := r.Create(ctx, tok); err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
			want = append(want, tok.ID)
		}
		if err := r.Create(ctx, newToken("other", base, time.Hour)); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		slices.Reverse(want) // newest first
		for _, limit := range []int{1, 7, 100, 250, 1000} {
			var got []string
			cursor, pages := "", 0
			for {
				items, next, err := r.List(ctx, "acme", cursor, limit)
				if err != nil {
					t.Fatalf("list: %v", err)
				}
				if len(items) > limit {
					t.Fatalf("page of %d with limit %d", len(items), limit)
				}
				for _, it := range items {
					if it.Tenant != "acme" {
						t.Fatalf("listed another tenant's token")
					}
					got = append(got, it.ID)
				}
				pages++
				if next == "" {
					break
				}
				if pages > 300 {
					t.Fatal("paging does not end")
				}
				cursor = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: listed %d ids, want %d in newest-first order without gaps or duplicates", limit, len(got), len(want))
			}
		}
		if _, _, err := r.List(ctx, "acme", "bad{cursor}", 10); !errors.Is(err, apperr.Validation) {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}

func TestTokensListPrunesExpiredMembers(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, 0, 0)
		keys := r.indexKeys(r.tag("acme"))
		live := newToken("acme", time.Now(), time.Hour)
		short := newToken("acme", time.Now(), 0)
		short.IssuedAt = time.Now().Add(-time.Second)
		short.ExpiresAt = time.Now().Add(1200 * time.Millisecond)
		for _, x := range []tokens.Token{live, short} {
			if err := r.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		// A member left behind by a crash between index and hash, long expired.
		stale := auth.NewTokenID(time.Now().Add(-time.Hour))
		past := time.Now().Add(-time.Hour).UnixMilli()
		for _, res := range s.Client.DoMulti(ctx,
			s.Client.B().Zadd().Key(keys[0]).ScoreMember().ScoreMember(float64(past), stale).Build(),
			s.Client.B().Zadd().Key(keys[1]).ScoreMember().ScoreMember(0, stale).Build()) {
			if err := res.Error(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(1500 * time.Millisecond) // let the short token expire
		items, _, err := r.List(ctx, "acme", "", 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].ID != live.ID {
			t.Fatalf("listed %+v, want only the live token", items)
		}
		for _, k := range keys {
			members, err := s.Client.Do(ctx, s.Client.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(members, []string{live.ID}) {
				t.Fatalf("%s holds %v after pruning, want only %s", k, members, live.ID)
			}
		}
	})
}

func TestTokensRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 2)
		now := time.Now()
		long := strings.Repeat("x", 2000)
		tests := []struct {
			name string
			mod  func(*tokens.Token)
			want error
		}{
			{"bad id", func(t *tokens.Token) { t.ID = "{slot}" }, apperr.BoundExceeded},
			{"long description", func(t *tokens.Token) { t.Description = long }, apperr.BoundExceeded},
			{"long subject", func(t *tokens.Token) { t.Subject = long }, apperr.BoundExceeded},
			{"control character", func(t *tokens.Token) { t.Subject = "a\nb" }, apperr.BoundExceeded},
			{"no tenant", func(t *tokens.Token) { t.Tenant = "" }, apperr.BoundExceeded},
			{"no scopes", func(t *tokens.Token) { t.Scopes = nil }, apperr.BoundExceeded},
			{"already expired", func(t *tokens.Token) { t.IssuedAt = now.Add(-time.Hour); t.ExpiresAt = now.Add(-time.Minute) }, tokens.ErrExpired},
		}
		for _, tt := range tests {
			tok := newToken("acme", now, time.Hour)
			tt.mod(&tok)
			if err := r.Create(ctx, tok); !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
			}
		}
		if n := testredis.KeyCount(t, s, prefix); n != 0 {
			t.Fatalf("refused creates wrote %d keys", n)
		}
		// The per-tenant bound: the third token of a tenant capped at two is refused.
		var ids []string
		for i := range 3 {
			tok := newToken("acme", now.Add(time.Duration(i)*time.Millisecond), time.Hour)
			err := r.Create(ctx, tok)
			if i < 2 && err != nil {
				t.Fatalf("create %d: %v", i, err)
			}
			if i == 2 && !errors.Is(err, apperr.QuotaExceeded) {
				t.Fatalf("third create: %v, want quota-exceeded", err)
			}
			ids = append(ids, tok.ID)
		}
		if n, err := s.Client.Do(ctx, s.Client.B().Exists().Key(r.hashKey(r.tag("acme"), ids[2])).Build()).AsInt64(); err != nil || n != 0 {
			t.Fatalf("a refused token got a metadata hash (%d, %v)", n, err)
		}
	})
}

func TestTokensStateClassifies(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newStore(t, s, prefix, time.Minute, 0)
		missing := auth.NewTokenID(time.Now())
		if _, err := r.State(ctx, "a", missing, 0); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("missing: %v", err)
		}
		if _, err := r.State(ctx, "a", "nope", 0); !errors.Is(err, apperr.NotFound) {
			t.Fatalf("malformed id: %v", err)
		}
		tests := []struct {
			name   string
			fields []string
			want   error
		}{
			{"bad revoked", []string{"revoked", "maybe", "expiresAtMs", "1", "tenantId", "a", "scopes", "x", "schemaVersion", "2"}, repo.ErrCorrupt},
			{"bad expiry", []string{"revoked", "0", "expiresAtMs", "soon", "tenantId", "a", "scopes", "x", "schemaVersion", "2"}, repo.ErrCorrupt},
			{"no tenant", []string{"revoked", "0", "expiresAtMs", "1", "scopes", "x", "schemaVersion", "2"}, repo.ErrCorrupt},
			{"future schema", []string{"revoked", "0", "expiresAtMs", "1", "tenantId", "a", "scopes", "x", "schemaVersion", "9"}, repo.ErrCorrupt},
			{"old schema", []string{"revoked", "0", "expiresAtMs", "1", "tenantId", "a", "scopes", "x", "schemaVersion", "1"}, nil},
		}
		for i, tt := range tests {
			id := auth.NewTokenID(time.Now().Add(time.Duration(i) * time.Millisecond))
			key := r.hashKey(r.tag("a"), id)
			cmd := s.Client.B().Hset().Key(key).FieldValue()
			for j := 0; j+1 < len(tt.fields); j += 2 {
				cmd = cmd.FieldValue(tt.fields[j], tt.fields[j+1])
			}
			for _, res := range s.Client.DoMulti(ctx, cmd.Build(), s.Client.B().Pexpire().Key(key).Milliseconds(60000).Build()) {
				if err := res.Error(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := r.State(ctx, "a", id, 0)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
			}
			if tt.want != nil {
				if _, err := r.Get(ctx, "a", id); !errors.Is(err, repo.ErrCorrupt) {
					t.Errorf("%s: get %v, want corrupt", tt.name, err)
				}
			}
		}
	})
}
