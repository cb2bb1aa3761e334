package sessions

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/testredis"
)

// svcEnv is a service under test that remembers every secret it handed out, so the suite can
// prove none of them reached Redis.
type svcEnv struct {
	t       *testing.T
	s       *store.Store
	svc     *Service
	r       *sessionstore.Sessions
	prefix  string
	mu      sync.Mutex
	secrets []string
	// codes are MFA codes handed out: no stored value may equal one (6 digits are too short
	// for a substring check: timestamps contain them).
	codes []string
}

func newSvcEnv(t *testing.T, s *store.Store, prefix string) *svcEnv {
	t.Helper()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	r, err := sessionstore.NewSessions(s, repo.Keys{Prefix: prefix}, sessionstore.SessionOptions{Layout: hostedLayout(s), RefreshFraction: 0.25,
		MaxPerUser: 50, MFA: ratelimit.Policy{Name: "mfa", Limit: 5, Window: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(r, h, Config{IdleTimeout: 30 * time.Minute, AbsoluteTimeout: 24 * time.Hour, ChallengeTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e := &svcEnv{t: t, s: s, svc: svc, r: r, prefix: prefix}
	// Every secret must stay out of Redis: checked when the test ends.
	t.Cleanup(func() { e.noSecretInRedis() })
	return e
}

func (e *svcEnv) remember(secrets ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, secrets...)
}

func (e *svcEnv) create(tenant, user string, in CreateInput) *Issued {
	e.t.Helper()
	in.UserID = user
	if in.AuthLevel == "" {
		in.AuthLevel = session.LevelBasic
	}
	is, err := e.svc.Create(context.Background(), tenant, in)
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	e.remember(is.Token, is.Token[len(tokenPrefix)+session.TagLen+1:])
	return is
}

func (e *svcEnv) challenge(tenant, id string) *Challenge {
	e.t.Helper()
	c, err := e.svc.StartChallenge(context.Background(), tenant, id)
	if err != nil {
		e.t.Fatalf("challenge: %v", err)
	}
	e.mu.Lock()
	e.codes = append(e.codes, c.Code)
	e.mu.Unlock()
	return c
}

func (e *svcEnv) verify(tenant, id, cid, code string) (*Issued, error) {
	is, err := e.svc.Verify(context.Background(), tenant, id, cid, code)
	if err == nil {
		e.remember(is.Token, is.Token[len(tokenPrefix)+session.TagLen+1:])
	}
	return is, err
}

// noSecretInRedis scans every key under the prefix on every node and fails if a key name or
// any value contains a token (or its random part); it returns how many keys it scanned.
func (e *svcEnv) noSecretInRedis() int {
	ctx := context.Background()
	var keys int
	for _, n := range e.s.Client.Nodes() {
		var cursor uint64
		for {
			se, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(e.prefix+":*").Count(500).Build()).AsScanEntry()
			if err != nil {
				e.t.Errorf("scan: %v", err)
				return keys
			}
			for _, k := range se.Elements {
				keys++
				e.noSecretIn("key name", k)
				for _, v := range dump(ctx, e.t, n, k) {
					e.noSecretIn("value of "+k, v)
				}
			}
			if cursor = se.Cursor; cursor == 0 {
				break
			}
		}
	}
	return keys
}

func (e *svcEnv) noSecretIn(what, s string) {
	for _, sec := range e.secrets {
		if strings.Contains(s, sec) {
			e.t.Errorf("a session token appears in the %s", what)
		}
	}
	for _, c := range e.codes {
		if s == c {
			e.t.Errorf("an MFA code is stored as the %s", what)
		}
	}
}

func dump(ctx context.Context, t *testing.T, n rueidis.Client, k string) []string {
	typ, err := n.Do(ctx, n.B().Type().Key(k).Build()).ToString()
	if err != nil {
		t.Errorf("type %s: %v", k, err)
		return nil
	}
	var out []string
	switch typ {
	case "hash":
		m, _ := n.Do(ctx, n.B().Hgetall().Key(k).Build()).AsStrMap()
		for f, v := range m {
			out = append(out, f, v)
		}
	case "zset":
		out, _ = n.Do(ctx, n.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
	case "string":
		v, _ := n.Do(ctx, n.B().Get().Key(k).Build()).ToString()
		out = append(out, v)
	case "none":
	default:
		t.Errorf("unexpected type %s for %s", typ, k)
	}
	return out
}

func wantKind(t *testing.T, err error, k *apperr.Kind) *apperr.Error {
	t.Helper()
	p, ok := apperr.As(err)
	if !ok || p.Kind != k {
		t.Fatalf("err = %v, want %s", err, k.Slug)
	}
	return p
}

func TestTokenFormat(t *testing.T) {
	t.Parallel()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tok, ref, mac, err := newToken(h, session.Ref{Tag: "AbCdEfGhIj_-"})
	if err != nil {
		t.Fatal(err)
	}
	if TokenLen != 79 || len(tok) != TokenLen || !strings.HasPrefix(tok, "hgs_AbCdEfGhIj_-_"+ref.Part+"_") {
		t.Fatalf("token %q (ref %+v)", tok, ref)
	}
	if _, ok := session.ParseID(ref.ID()); !ok || len(ref.ID()) != 33 {
		t.Fatalf("session id %q", ref.ID())
	}
	r2, id, mac2, ok := parseToken(h, tok)
	if !ok || r2 != ref || id != ref.ID() || mac2 != mac || len(mac) != verifierMACLen {
		t.Fatalf("parse: %+v %q %q %v (made %+v %q)", r2, id, mac2, ok, ref, mac)
	}
	// A rotation keeps the selector (the id) and replaces the verifier, so the MAC.
	rot, rref, rmac, err := newToken(h, ref)
	if err != nil || rref != ref || rot == tok || rmac == mac || rot[:verifierAt] != tok[:verifierAt] {
		t.Fatalf("rotated %q %+v %q %v", rot, rref, rmac, err)
	}
	// The MAC is keyed: another key gives another MAC for the same token.
	other, _, _ := keyhash.Generate()
	if _, _, omac, _ := parseToken(other, tok); omac == mac {
		t.Fatal("the verifier MAC does not depend on the key")
	}
	last := tok[len(tok)-1]
	tests := []struct {
		name string
		tok  string
	}{
		{"empty", ""},
		{"short", tok[:len(tok)-1]},
		{"long", tok + "A"},
		{"prefix", "hgx" + tok[3:]},
		{"separator", tok[:16] + "-" + tok[17:]},
		{"second separator", tok[:verifierAt-1] + "-" + tok[verifierAt:]},
		{"old format", "hgs_AbCdEfGhIj_-_" + tok[verifierAt:]},
		{"brace in tag", tok[:5] + "{" + tok[6:]},
		{"space", tok[:30] + " " + tok[31:]},
		// 43 base64url characters end with two spare bits: only the canonical spelling counts.
		{"non-canonical", tok[:len(tok)-1] + string(nonCanonical(last))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, _, _, ok := parseToken(h, tt.tok); ok {
				t.Fatalf("parseToken(%q) accepted", tt.tok)
			}
		})
	}
}

// nonCanonical returns another base64url character that decodes to the same 6 bits' top 4.
func nonCanonical(c byte) byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return alphabet[i^1]
}

func TestServiceFlow(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		ctx := context.Background()
		is := e.create("acme", "alice", CreateInput{DeviceLabel: "Alice's phone", UserAgent: "Mozilla/5.0", IP: "::ffff:192.0.2.1"})
		if is.Status != session.Active || is.AuthLevel != session.LevelBasic || !strings.HasPrefix(is.Ref.ID(), "s_") {
			t.Fatalf("created %+v", is.Session)
		}
		if d := is.IdleExpiresAt.Sub(is.CreatedAt); d != 30*time.Minute {
			t.Fatalf("idle window %v", d)
		}
		p, err := e.svc.Authenticate(ctx, is.Token)
		if err != nil || p.Kind != auth.KindSession || p.Subject != "alice" || p.Tenant != "acme" ||
			p.SessionID != is.Ref.ID() || p.AuthLevel != session.LevelBasic {
			t.Fatalf("principal %+v %v", p, err)
		}
		cur, err := e.svc.Current(ctx, p)
		if err != nil || cur.DeviceLabel != "Alice's phone" {
			t.Fatalf("current %+v %v", cur, err)
		}

		c := e.challenge("acme", is.Ref.ID())
		// Per session, a hash and the device index; per user, the user's hash alone.
		want := 2
		if s.Caps.FieldExpiryMs {
			want = 1
		}
		if n := e.noSecretInRedis(); n < want {
			t.Fatalf("scanned %d keys while a session exists, want at least %d", n, want)
		}
		if len(c.ID) != 22 || len(c.Code) != 6 || time.Until(c.ExpiresAt) > 5*time.Minute {
			t.Fatalf("challenge %+v", c)
		}
		wrong := "000000"
		if c.Code == wrong {
			wrong = "111111"
		}
		_, err = e.verify("acme", is.Ref.ID(), c.ID, wrong)
		pe := wantKind(t, err, apperr.WrongCode)
		if pe.Extra["attemptsLeft"] != 4 || pe.Headers["RateLimit"] == "" || pe.Headers["RateLimit-Policy"] != `"mfa";q=5;w=600` {
			t.Fatalf("wrong code problem %+v", pe)
		}
		up, err := e.verify("acme", is.Ref.ID(), c.ID, c.Code)
		if err != nil || up.Status != session.MFAVerified || up.AuthLevel != session.LevelMFA || up.Ref.ID() != is.Ref.ID() || up.Token == is.Token {
			t.Fatalf("verified %+v %v", up, err)
		}
		wantKind(t, authErr(e.svc.Authenticate(ctx, is.Token)), apperr.InvalidCredentials)
		p2, err := e.svc.Authenticate(ctx, up.Token)
		if err != nil || p2.AuthLevel != session.LevelMFA || p2.SessionID != up.Ref.ID() {
			t.Fatalf("stepped-up principal %+v %v", p2, err)
		}

		rot, err := e.svc.Rotate(ctx, "acme", up.Ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		e.remember(rot.Token)
		if !rot.AbsoluteExpiresAt.Equal(is.AbsoluteExpiresAt) || rot.AuthLevel != session.LevelMFA {
			t.Fatalf("rotated %+v (absolute deadline was %v)", rot.Session, is.AbsoluteExpiresAt)
		}
		wantKind(t, authErr(e.svc.Authenticate(ctx, up.Token)), apperr.InvalidCredentials)
		p3, err := e.svc.Authenticate(ctx, rot.Token)
		if err != nil {
			t.Fatal(err)
		}

		second := e.create("acme", "alice", CreateInput{DeviceLabel: "laptop"})
		devices, err := e.svc.Devices(ctx, p3, "", 100)
		if err != nil || len(devices.Items) != 2 || devices.Items[0].Ref != second.Ref {
			t.Fatalf("devices %+v %v", devices, err)
		}
		if err := e.svc.RevokeDevice(ctx, p3, second.Ref.ID()); err != nil {
			t.Fatal(err)
		}
		wantKind(t, authErr(e.svc.Authenticate(ctx, second.Token)), apperr.InvalidCredentials)
		if err := e.svc.Logout(ctx, p3); err != nil {
			t.Fatal(err)
		}
		wantKind(t, authErr(e.svc.Authenticate(ctx, rot.Token)), apperr.InvalidCredentials)
		if list, err := e.svc.ListUser(ctx, "acme", "alice", "", 100); err != nil || len(list.Items) != 0 {
			t.Fatalf("after logout: %+v %v", list, err)
		}
	})
}

func authErr(_ *auth.Principal, err error) error { return err }

// A create that asks for MFA, or at level MFA, reads back as asked (the repository stores
// status and authLevel only when they differ from ACTIVE and BASIC); a plain one as ACTIVE,
// BASIC. "Who am I" refuses the one whose login waits for MFA (mfa-required).
func TestServiceCreateStatusAndLevel(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		ctx := context.Background()
		for _, tt := range []struct {
			name          string
			in            CreateInput
			status, level string
		}{
			{"plain", CreateInput{}, session.Active, session.LevelBasic},
			{"mfa required", CreateInput{MFARequired: true}, session.MFARequired, session.LevelBasic},
			{"mfa level", CreateInput{AuthLevel: session.LevelMFA}, session.Active, session.LevelMFA},
		} {
			is := e.create("acme", "dora", tt.in)
			if is.Status != tt.status || is.AuthLevel != tt.level {
				t.Fatalf("%s: created %+v", tt.name, is.Session)
			}
			p, err := e.svc.Authenticate(ctx, is.Token)
			if err != nil || p.AuthLevel != tt.level {
				t.Fatalf("%s: principal %+v %v", tt.name, p, err)
			}
			cur, err := e.svc.Current(ctx, p)
			if tt.in.MFARequired { // login-time MFA: not logged in until the verify
				wantKind(t, err, apperr.MFARequired)
			} else if err != nil || cur.Status != tt.status || cur.AuthLevel != tt.level {
				t.Fatalf("%s: current %+v %v", tt.name, cur, err)
			}
			got, err := e.svc.Get(ctx, "acme", is.Ref.ID())
			if err != nil || got.Status != tt.status || got.AuthLevel != tt.level {
				t.Fatalf("%s: get %+v %v", tt.name, got, err)
			}
		}
	})
}

// Bad input answers clear 4xx refusals and writes nothing.
func TestServiceBadInput(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		ctx := context.Background()
		a := e.create("acme", "alice", CreateInput{})
		b := e.create("acme", "bob", CreateInput{})
		ca := e.challenge("acme", a.Ref.ID())
		cb := e.challenge("acme", b.Ref.ID())

		// A token whose tag was swapped for another user's: its hash, so its key, changes.
		swapped := tokenPrefix + b.Ref.Tag + a.Token[len(tokenPrefix)+session.TagLen:]
		// A session whose stored owner does not hash to its token's tag (a tag no user holds: in
		// the per-user layout a create under another user's tag is refused, since that user's
		// hash names its owner).
		forged, fref, fmac, _ := newToken(e.svc.hasher, session.Ref{Tag: "forgedTagQQQ"})
		e.remember(forged)
		if _, err := e.r.Create(ctx, session.Record{Ref: fref, VerifierMAC: fmac, UserID: "alice", TenantID: "acme",
			Status: session.Active, AuthLevel: session.LevelBasic, Idle: time.Minute, Absolute: time.Hour}); err != nil {
			t.Fatal(err)
		}

		tests := []struct {
			name string
			err  error
			kind *apperr.Kind
		}{
			{"malformed token", authErr(e.svc.Authenticate(ctx, "hgs_nope")), apperr.InvalidCredentials},
			{"unknown token", authErr(e.svc.Authenticate(ctx, tokenPrefix+a.Ref.Tag+"_"+strings.Repeat("A", 43))), apperr.InvalidCredentials},
			{"swapped tag", authErr(e.svc.Authenticate(ctx, swapped)), apperr.InvalidCredentials},
			{"owner does not match tag", authErr(e.svc.Authenticate(ctx, forged)), apperr.InvalidCredentials},
			{"another tenant gets", second(e.svc.Get(ctx, "globex", a.Ref.ID())), apperr.NotFound},
			{"another tenant rotates", second(e.svc.Rotate(ctx, "globex", a.Ref.ID())), apperr.NotFound},
			{"another tenant challenges", second(e.svc.StartChallenge(ctx, "globex", a.Ref.ID())), apperr.NotFound},
			{"another tenant verifies", second(e.svc.Verify(ctx, "globex", a.Ref.ID(), ca.ID, ca.Code)), apperr.NotFound},
			{"challenge id of another session", second(e.svc.Verify(ctx, "acme", a.Ref.ID(), cb.ID, cb.Code)), apperr.Gone},
			{"code with letters", second(e.svc.Verify(ctx, "acme", a.Ref.ID(), ca.ID, "12a456")), apperr.Validation},
			{"short code", second(e.svc.Verify(ctx, "acme", a.Ref.ID(), ca.ID, "12345")), apperr.Validation},
			{"bad challenge id", second(e.svc.Verify(ctx, "acme", a.Ref.ID(), "x", ca.Code)), apperr.Validation},
			{"malformed session id", second(e.svc.Get(ctx, "acme", "s_{bad}")), apperr.NotFound},
			{"long label", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "BASIC", DeviceLabel: strings.Repeat("é", 65)})), apperr.Validation},
			{"control in label", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "BASIC", DeviceLabel: "a\nb"})), apperr.Validation},
			{"long user agent", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "BASIC", UserAgent: strings.Repeat("a", 513)})), apperr.Validation},
			{"bad ip", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "BASIC", IP: "1.2.3.999"})), apperr.Validation},
			{"bad user", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "car{ol}", AuthLevel: "BASIC"})), apperr.Validation},
			{"bad level", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "ROOT"})), apperr.Validation},
			{"idle over absolute", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "BASIC", IdleTimeout: time.Hour, AbsoluteTimeout: time.Minute})), apperr.Validation},
			{"mfa required at MFA", second(e.svc.Create(ctx, "acme", CreateInput{UserID: "carol", AuthLevel: "MFA", MFARequired: true})), apperr.Unprocessable},
			{"no tenant", second(e.svc.Create(ctx, "", CreateInput{UserID: "carol", AuthLevel: "BASIC"})), apperr.Unauthenticated},
			{"except of another user", second(e.svc.RevokeUser(ctx, "acme", "alice", b.Ref.ID())), apperr.Validation},
			{"device of another user", e.svc.RevokeDevice(ctx, mustAuth(t, e.svc, a.Token), b.Ref.ID()), apperr.NotFound},
			{"bearer on an end-user call", second(e.svc.Devices(ctx, &auth.Principal{Kind: auth.KindBearer, Tenant: "acme"}, "", 100)), apperr.Unauthenticated},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { wantKind(t, tt.err, tt.kind) })
		}
		if list, err := e.svc.ListUser(ctx, "acme", "carol", "", 100); err != nil || len(list.Items) != 0 {
			t.Fatalf("a refused create wrote a session: %+v", list)
		}
		// The refusals touched nothing: both sessions and the right code still work.
		if _, err := e.svc.Authenticate(ctx, b.Token); err != nil {
			t.Fatal(err)
		}
		if _, err := e.verify("acme", a.Ref.ID(), ca.ID, ca.Code); err != nil {
			t.Fatalf("right code after the refusals: %v", err)
		}
	})
}

func second[T any](_ T, err error) error { return err }

func mustAuth(t *testing.T, s *Service, token string) *auth.Principal {
	t.Helper()
	p, err := s.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// After revoke-all nothing of the user is usable: no token authenticates, no challenge answers.
func TestServiceRevokeAllLeavesNothingUsable(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		ctx := context.Background()
		var all []*Issued
		for range 5 {
			all = append(all, e.create("acme", "dave", CreateInput{}))
		}
		c := e.challenge("acme", all[1].Ref.ID())
		keep := all[0]
		n, err := e.svc.RevokeUser(ctx, "acme", "dave", keep.Ref.ID())
		if err != nil || n != 4 {
			t.Fatalf("revoke except one: %d %v", n, err)
		}
		if _, err := e.svc.Authenticate(ctx, keep.Token); err != nil {
			t.Fatalf("kept session: %v", err)
		}
		n, err = e.svc.RevokeUser(ctx, "acme", "dave", "")
		if err != nil || n != 1 {
			t.Fatalf("revoke all: %d %v", n, err)
		}
		for _, is := range all {
			wantKind(t, authErr(e.svc.Authenticate(ctx, is.Token)), apperr.InvalidCredentials)
			wantKind(t, second(e.svc.Rotate(ctx, "acme", is.Ref.ID())), apperr.NotFound)
		}
		wantKind(t, second(e.verify("acme", all[1].Ref.ID(), c.ID, c.Code)), apperr.NotFound)
		if list, err := e.svc.ListUser(ctx, "acme", "dave", "", 100); err != nil || len(list.Items) != 0 {
			t.Fatalf("listed after revoke-all: %+v %v", list, err)
		}
	})
}

// 64 concurrent wrong codes through the service: exactly the limit answers 422, the rest 429
// with Retry-After and the IETF headers.
func TestServiceVerifyConcurrent(t *testing.T) {
	t.Parallel()
	testredis.Each(t, func(t *testing.T, _ testredis.Backend, s *store.Store, prefix string) {
		e := newSvcEnv(t, s, prefix)
		is := e.create("acme", "erin", CreateInput{})
		c := e.challenge("acme", is.Ref.ID())
		wrong := "123456"
		if c.Code == wrong {
			wrong = "654321"
		}
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				_, err := e.verify("acme", is.Ref.ID(), c.ID, wrong)
				p, ok := apperr.As(err)
				mu.Lock()
				defer mu.Unlock()
				if !ok {
					t.Errorf("unexpected %v", err)
					return
				}
				got[p.Kind.Slug]++
				if p.Kind == apperr.RateLimited && (p.RetryAfter <= 0 || p.Headers["RateLimit"] == "" || p.Headers["RateLimit-Policy"] == "") {
					t.Errorf("429 without its headers: %+v", p)
				}
			})
		}
		wg.Wait()
		if got[apperr.WrongCode.Slug] != 5 || got[apperr.RateLimited.Slug] != 59 {
			t.Fatalf("outcomes %v", got)
		}
	})
}

// parseToken's canonical-spelling check agrees with a strict base64url decoder for every
// possible last character.
func TestParseTokenCanonicalLastCharacter(t *testing.T) {
	t.Parallel()
	h, _, err := keyhash.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tok, _, _, err := newToken(h, session.Ref{Tag: "AbCdEfGhIj_-"})
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < len(alphabet); i++ {
		cand := tok[:len(tok)-1] + alphabet[i:i+1]
		_, decErr := base64.RawURLEncoding.Strict().DecodeString(cand[verifierAt:])
		if _, _, _, ok := parseToken(h, cand); ok != (decErr == nil) {
			t.Errorf("last character %q: parseToken ok=%v, strict decode error %v", alphabet[i], ok, decErr)
		}
	}
}

// hostedLayout is the per-user layout where s can host it, else the per-session one: the
// service's tests run over whichever layout the backend holds (the store's own tests run both).
func hostedLayout(s *store.Store) sessionstore.SessionLayout {
	if sessionstore.Hosts(s.Caps, sessionstore.LayoutPerUser) != nil {
		return sessionstore.LayoutPerSession
	}
	return sessionstore.LayoutPerUser
}
