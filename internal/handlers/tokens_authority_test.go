package handlers

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/testredis"
	"github.com/hashgate/hashgate/internal/tokens"
)

// tokenTree is a tenant's tokens as a user builds them: a root admin token (bootstrap/CLI
// path, holding tokens:admin) issues issuer-svc; issuer-svc mints alice and bob (siblings);
// alice mints kid. globex is another tenant's admin.
type tokenTree struct {
	h                                   *harness
	admin, issuer, alice, bob, kid      string // "Bearer <jwt>"
	adminID, issuerID, aliceID, bobID   string
	kidID, globexID, globex, unknownID  string
	adminSubject, issuerSubject, aliceS string
}

func newTokenTree(t *testing.T) tokenTree {
	t.Helper()
	env := newTokenEnv(t, nil)
	s := testredis.Open(t, testredis.Backends()[0])
	h := env.harness(t, s, testredis.Prefix(t), tokens.Options{CacheTTL: time.Second})
	rw := []string{auth.ScopeTokensWrite, auth.ScopeTokensRead}
	tr := tokenTree{h: h, admin: h.bearer("acme", append(rw, auth.ScopeTokensAdmin)...), globex: h.bearer("globex", append(rw, auth.ScopeTokensAdmin)...)}
	tr.adminID, tr.globexID = bearerID(t, env.auth, tr.admin), bearerID(t, env.auth, tr.globex)
	mint := func(by, subject string) (string, string) {
		body := tokenRequest(600, rw...)
		body["subject"] = subject
		out := mustIssueToken(t, h, by, body)
		return "Bearer " + out.Token, out.TokenId
	}
	tr.issuer, tr.issuerID = mint(tr.admin, "issuer-svc")
	tr.alice, tr.aliceID = mint(tr.issuer, "alice")
	tr.bob, tr.bobID = mint(tr.issuer, "bob")
	tr.kid, tr.kidID = mint(tr.alice, "alice-kid")
	tr.unknownID = auth.NewTokenID(time.Now())
	return tr
}

func bearerID(t *testing.T, a *auth.Authority, bearer string) string {
	t.Helper()
	c, err := a.Verify(strings.TrimPrefix(bearer, "Bearer "))
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// live reports whether bearer still authenticates.
func (tr tokenTree) live(t *testing.T, bearer string) bool {
	t.Helper()
	rec := tr.h.do("GET", "/v1/authorize", nil, "Authorization", bearer)
	if rec.Code != 200 && rec.Code != 401 {
		t.Fatalf("authorize: %d %s", rec.Code, rec.Body)
	}
	return rec.Code == 200
}

// notFoundBody is a GET answer with the id and the request id replaced, to compare refusals
// with unknown ids.
func notFoundBody(rec *httptest.ResponseRecorder, id string) string {
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		return "not JSON: " + rec.Body.String()
	}
	delete(m, "requestId")
	raw, _ := json.Marshal(m)
	return rec.Header().Get("Content-Type") + " " + strings.ReplaceAll(string(raw), id, "<id>")
}

func (tr tokenTree) listIDs(t *testing.T, bearer string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		rec := tr.h.do("GET", "/v1/tokens?limit=2"+cursor, nil, "Authorization", bearer)
		var page TokenPage
		decode(t, rec, &page)
		if rec.Code != 200 {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		for _, m := range page.Items {
			ids = append(ids, m.TokenId)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	slices.Sort(ids)
	return ids
}

func sortedIDs(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// TestMintedTokenCannotRevokeItsIssuer is the defect as a user saw it: the admin token issues
// issuer-svc with tokens:write, issuer-svc mints alice with tokens:write, and alice's DELETE of
// the admin token's id revoked the admin token and everything under it. Now alice reaches only
// herself and what she minted; a token she may not touch answers exactly as an unknown id
// (GET 404 with the same body, DELETE 204 changing nothing), and lists show her lineage only.
func TestMintedTokenCannotRevokeItsIssuer(t *testing.T) {
	t.Parallel()
	tr := newTokenTree(t)
	h := tr.h
	unknown := h.do("GET", "/v1/tokens/"+tr.unknownID, nil, "Authorization", tr.alice)
	wantProblem(t, unknown, 404, "not-found")
	for name, id := range map[string]string{"root admin": tr.adminID, "parent": tr.issuerID, "sibling": tr.bobID, "other tenant": tr.globexID} {
		rec := h.do("GET", "/v1/tokens/"+id, nil, "Authorization", tr.alice)
		if rec.Code != 404 || notFoundBody(rec, id) != notFoundBody(unknown, tr.unknownID) {
			t.Fatalf("alice GET %s: %d %s, want the unknown id's 404 %s", name, rec.Code, rec.Body, unknown.Body)
		}
		if rec := h.do("DELETE", "/v1/tokens/"+id, nil, "Authorization", tr.alice); rec.Code != 204 {
			t.Fatalf("alice DELETE %s: %d %s, want the unknown id's 204", name, rec.Code, rec.Body)
		}
	}
	for name, b := range map[string]string{"admin": tr.admin, "issuer": tr.issuer, "bob": tr.bob, "globex": tr.globex, "kid": tr.kid, "alice": tr.alice} {
		if !tr.live(t, b) {
			t.Fatalf("%s was revoked by alice", name)
		}
	}
	for name, id := range map[string]string{"self": tr.aliceID, "descendant": tr.kidID} {
		if rec := h.do("GET", "/v1/tokens/"+id, nil, "Authorization", tr.alice); rec.Code != 200 {
			t.Fatalf("alice GET %s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if got, want := tr.listIDs(t, tr.alice), sortedIDs(tr.aliceID, tr.kidID); !slices.Equal(got, want) {
		t.Fatalf("alice lists %v, want herself and her descendant %v", got, want)
	}
	if got, want := tr.listIDs(t, tr.issuer), sortedIDs(tr.issuerID, tr.aliceID, tr.bobID, tr.kidID); !slices.Equal(got, want) {
		t.Fatalf("issuer lists %v, want %v", got, want)
	}
	if got, want := tr.listIDs(t, tr.admin), sortedIDs(tr.adminID, tr.issuerID, tr.aliceID, tr.bobID, tr.kidID); !slices.Equal(got, want) {
		t.Fatalf("admin lists %v, want the whole tenant %v", got, want)
	}
	if got, want := tr.listIDs(t, tr.globex), []string{tr.globexID}; !slices.Equal(got, want) {
		t.Fatalf("globex lists %v, want %v", got, want)
	}
	// A descendant and then itself: both are alice's to revoke.
	if rec := h.do("DELETE", "/v1/tokens/"+tr.kidID, nil, "Authorization", tr.alice); rec.Code != 204 || tr.live(t, tr.kid) {
		t.Fatalf("alice DELETE her descendant: %d, kid live %v", rec.Code, tr.live(t, tr.kid))
	}
	if got, want := tr.listIDs(t, tr.issuer), sortedIDs(tr.issuerID, tr.aliceID, tr.bobID, tr.kidID); !slices.Equal(got, want) {
		t.Fatalf("issuer lists %v after kid's revocation, want %v", got, want)
	}
	if rec := h.do("DELETE", "/v1/tokens/"+tr.aliceID, nil, "Authorization", tr.alice); rec.Code != 204 || tr.live(t, tr.alice) {
		t.Fatalf("alice DELETE herself: %d", rec.Code)
	}
	// The issuer still sees alice's revoked subtree (revoked with her, listed until it expires).
	if got, want := tr.listIDs(t, tr.issuer), sortedIDs(tr.issuerID, tr.aliceID, tr.bobID, tr.kidID); !slices.Equal(got, want) {
		t.Fatalf("issuer lists %v after alice's revocation, want %v", got, want)
	}
	// A sibling's view: bob cannot see or revoke the issuer, alice or kid.
	for _, id := range []string{tr.issuerID, tr.aliceID, tr.kidID, tr.adminID} {
		if rec := h.do("GET", "/v1/tokens/"+id, nil, "Authorization", tr.bob); rec.Code != 404 {
			t.Fatalf("bob GET %s: %d", id, rec.Code)
		}
	}
	// The other tenant's admin reaches nothing of acme's.
	if rec := h.do("DELETE", "/v1/tokens/"+tr.issuerID, nil, "Authorization", tr.globex); rec.Code != 204 || !tr.live(t, tr.issuer) {
		t.Fatalf("globex DELETE acme's issuer: %d, issuer live %v", rec.Code, tr.live(t, tr.issuer))
	}
	if rec := h.do("GET", "/v1/tokens/"+tr.issuerID, nil, "Authorization", tr.globex); rec.Code != 404 {
		t.Fatalf("globex GET acme's issuer: %d", rec.Code)
	}
	// The tenant's admin (tokens:admin) reaches any token of its tenant: the issuer and bob go.
	if rec := h.do("GET", "/v1/tokens/"+tr.bobID, nil, "Authorization", tr.admin); rec.Code != 200 {
		t.Fatalf("admin GET bob: %d", rec.Code)
	}
	if rec := h.do("DELETE", "/v1/tokens/"+tr.issuerID, nil, "Authorization", tr.admin); rec.Code != 204 || tr.live(t, tr.issuer) || tr.live(t, tr.bob) {
		t.Fatalf("admin DELETE issuer: %d", rec.Code)
	}
	if !tr.live(t, tr.admin) {
		t.Fatal("the admin token died with what it minted")
	}
}

// tokens:admin is held by root tokens only: POST /v1/tokens refuses it, even to an admin, with
// a problem that names the scope and where root tokens come from.
func TestTokenAdminScopeNotMintable(t *testing.T) {
	t.Parallel()
	tr := newTokenTree(t)
	for _, scopes := range [][]string{{auth.ScopeTokensAdmin}, {auth.ScopeTokensRead, auth.ScopeTokensAdmin}} {
		p := wantProblem(t, tr.h.do("POST", "/v1/tokens", tokenRequest(600, scopes...), "Authorization", tr.admin), 400, "validation")
		if !strings.Contains(p.Detail, auth.ScopeTokensAdmin) || !strings.Contains(p.Detail, "gateway token mint") {
			t.Fatalf("refusal does not say why or what to do: %+v", p)
		}
	}
}
