package repo

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens/token"
)

// TestTokensLegacyKeyStillServed: a token written by a gateway before token lineage, under
// <prefix>:v1:token:{<tokenId>} and listed in its tenant's index, keeps working after the
// upgrade: the check reads it, get and list show it, its tenant revokes it (another tenant's
// revoke is an unknown id's no-op); it mints nothing (ErrTokenLegacyIssuer), writing nothing.
func TestTokensLegacyKeyStillServed(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		ctx := context.Background()
		r := newTokensRepo(t, s, prefix, time.Minute, 0)
		now := time.Now()
		old := newToken("acme", now, time.Hour)
		key := r.legacyKey(old.ID)
		exp := strconv.FormatInt(old.ExpiresAt.UnixMilli(), 10)
		at := strconv.FormatInt(now.UnixMilli(), 10)
		idx := r.indexKeys(r.tag("acme")) // the index keys did not move
		for _, res := range s.Client.DoMulti(ctx,
			s.Client.B().Hset().Key(key).FieldValue().FieldValue("tenantId", "acme").FieldValue("subject", "svc-a").
				FieldValue("tokenType", "service").FieldValue("scopes", "tokens:read quotes:read").FieldValue("description", "").
				FieldValue("issuedAtMs", at).FieldValue("expiresAtMs", exp).FieldValue("revoked", "0").
				FieldValue("revokedAtMs", "0").FieldValue("revokedReason", "").FieldValue("schemaVersion", strconv.Itoa(SchemaVersion)).
				FieldValue("createdAtMs", at).FieldValue("updatedAtMs", at).Build(),
			s.Client.B().Pexpire().Key(key).Milliseconds(int64(2*time.Hour/time.Millisecond)).Build()) {
			if err := res.Error(); err != nil {
				t.Fatal(err)
			}
		}
		for i, k := range idx {
			score := float64(old.ExpiresAt.UnixMilli())
			if i == 1 {
				score = 0
			}
			for _, res := range s.Client.DoMulti(ctx, s.Client.B().Zadd().Key(k).ScoreMember().ScoreMember(score, old.ID).Build(),
				s.Client.B().Pexpire().Key(k).Milliseconds(int64(2*time.Hour/time.Millisecond)).Build()) {
				if err := res.Error(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if st, err := r.State(ctx, "acme", old.ID, 0); err != nil || st.Revoked || st.Tenant != "acme" {
			t.Fatalf("state of a legacy token: %+v %v", st, err)
		}
		if got, err := r.Get(ctx, "acme", old.ID); err != nil || got.ID != old.ID {
			t.Fatalf("get: %+v %v", got, err)
		}
		if items, _, err := r.List(ctx, "acme", "", 10); err != nil || len(items) != 1 || items[0].ID != old.ID {
			t.Fatalf("list: %+v %v", items, err)
		}
		n := testredis.KeyCount(t, s, prefix)
		child := newToken("acme", now, time.Minute)
		child.ParentID = old.ID
		if err := r.Create(ctx, child); !errors.Is(err, ErrTokenLegacyIssuer) {
			t.Fatalf("a legacy token minted: %v", err)
		}
		if res, _, err := r.Revoke(ctx, "globex", old.ID, "x"); err != nil || res != token.RevokeUnknown {
			t.Fatalf("another tenant's revoke: %v %v", res, err)
		}
		if got := testredis.KeyCount(t, s, prefix); got != n {
			t.Fatalf("refusals wrote keys: %d → %d", n, got)
		}
		if st, _ := r.State(ctx, "acme", old.ID, 0); st.Revoked {
			t.Fatal("another tenant revoked it")
		}
		if res, _, err := r.Revoke(ctx, "acme", old.ID, "upgrade"); err != nil || res != token.Revoked {
			t.Fatalf("revoke: %v %v", res, err)
		}
		if st, err := r.State(ctx, "acme", old.ID, 0); err != nil || !st.Revoked {
			t.Fatalf("state after revoke: %+v %v", st, err)
		}
		if res, _, err := r.Revoke(ctx, "acme", old.ID, "again"); err != nil || res != token.AlreadyRevoked {
			t.Fatalf("second revoke: %v %v", res, err)
		}
	})
}
