package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testauth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// tokenSnapshot is what a refused issue must leave untouched: the tenant's two index keys
// (members, scores, absolute expiry) and the number of token metadata hashes.
//
// The embedded store keeps a TTL as a duration and answers PEXPIRETIME as now plus that
// duration, so its answer moves with the wall clock (by a few ms on a loaded machine): there
// the expiry is left out and the write recorder alone proves no EXPIRE was sent.
func tokenSnapshot(t *testing.T, s *store.Store, indexKeys []string, prefix string, embedded bool) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, k := range indexKeys {
		zs, err := s.Client.Do(ctx, s.Client.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
		if err != nil {
			t.Fatalf("zrange %s: %v", k, err)
		}
		if len(zs) == 0 {
			t.Fatalf("index %s is empty: the snapshot would prove nothing", k)
		}
		at, err := s.Client.Do(ctx, s.Client.B().Pexpiretime().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatalf("pexpiretime %s: %v", k, err)
		}
		if at <= 0 {
			t.Fatalf("index %s has no expiry (%d)", k, at)
		}
		if embedded {
			at = 0
		}
		fmt.Fprintf(&b, "%s expires %d:", k, at)
		for _, z := range zs {
			fmt.Fprintf(&b, " %s=%v", z.Member, z.Score)
		}
		b.WriteByte('\n')
	}
	n := 0
	for _, node := range s.Client.Nodes() {
		cursor := uint64(0)
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+":v1:token:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			n += len(e.Elements)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	fmt.Fprintf(&b, "token hashes: %d\n", n)
	return b.String()
}

// A refused POST /v1/tokens writes nothing: for each refusal the tenant's index keys
// (already populated), their expiry and the token hashes are unchanged, and no command other
// than a read-only one reached Redis through the token repository.
func TestRefusedTokenIssueWritesNothing(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, b testredis.Backend, s *store.Store, prefix string) {
		rec := testredis.NewRecorder(s.Client)
		recorded := *s
		recorded.Client = rec
		env := newTokenEnv(t, nil)
		h := env.harness(t, &recorded, prefix, tokens.Options{MaxTTL: 24 * time.Hour, CacheTTL: 5 * time.Second})
		admin := h.bearer("acme", auth.ScopeTokensWrite, auth.ScopeTokensRead)
		narrow := h.bearer("acme", auth.ScopeTokensWrite)
		mustIssueToken(t, h, admin, tokenRequest(600, auth.ScopeTokensRead))
		if len(rec.TakeWrites()) == 0 {
			t.Fatal("issuing wrote nothing through the recorder: it does not see the repository's commands")
		}
		tag := env.hasher.Tag("tenant", 9, "acme")
		indexKeys := []string{prefix + ":v1:tokens:{" + tag + "}:byexp", prefix + ":v1:tokens:{" + tag + "}:byid"}
		noMetadata := testauth.Mint(t, env.auth, "acme", auth.ScopeTokensWrite, auth.ScopeTokensRead)
		issue := func(m map[string]any) map[string]any {
			out := map[string]any{"subject": "svc-b", "scopes": []string{auth.ScopeTokensRead}, "ttlSeconds": 600, "tokenType": "service"}
			for k, v := range m {
				out[k] = v
			}
			return out
		}
		cases := []struct {
			name   string
			body   any
			bearer string
			status int
		}{
			{"unknown scope", issue(map[string]any{"scopes": []string{"admin"}}), admin, 400},
			{"custom scope on a gateway resource", issue(map[string]any{"scopes": []string{"sessions:admin"}}), admin, 400},
			{"scope the caller lacks", issue(map[string]any{"scopes": []string{auth.ScopeTokensRead}}), narrow, 403},
			{"no scopes", issue(map[string]any{"scopes": []string{}}), admin, 400},
			{"duplicate scopes", issue(map[string]any{"scopes": []string{auth.ScopeTokensRead, auth.ScopeTokensRead}}), admin, 400},
			{"ttl under the minimum", issue(map[string]any{"ttlSeconds": 59}), admin, 400},
			{"ttl over the contract", issue(map[string]any{"ttlSeconds": 31536001}), admin, 400},
			{"ttl over the configured max", issue(map[string]any{"ttlSeconds": 86401}), admin, 400},
			{"bad tokenType", issue(map[string]any{"tokenType": "root"}), admin, 400},
			{"oversized description", issue(map[string]any{"description": strings.Repeat("x", 257)}), admin, 400},
			{"control character in description", issue(map[string]any{"description": "a\u0007b"}), admin, 400},
			{"bad subject", issue(map[string]any{"subject": "a b/{c}"}), admin, 400},
			{"extra tenant field", issue(map[string]any{"tenant": "other"}), admin, 400},
			{"truncated body", `{"subject":`, admin, 400},
			{"bearer without metadata", issue(nil), "Bearer " + noMetadata, 401},
		}
		for _, tc := range cases {
			before := tokenSnapshot(t, s, indexKeys, prefix, b.URL == "")
			resp := h.do("POST", "/v1/tokens", tc.body, "Authorization", tc.bearer)
			if resp.Code != tc.status {
				t.Errorf("%s: %d, want %d: %s", tc.name, resp.Code, tc.status, resp.Body)
			}
			if writes := rec.TakeWrites(); len(writes) > 0 {
				t.Errorf("%s: refused request sent write commands: %q", tc.name, writes)
			}
			if after := tokenSnapshot(t, s, indexKeys, prefix, b.URL == ""); after != before {
				t.Errorf("%s: refused request changed Redis:\nbefore %s\nafter  %s", tc.name, before, after)
			}
		}
	})
}
