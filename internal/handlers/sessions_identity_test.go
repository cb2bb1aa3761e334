package handlers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/repo/sessionstore"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/testredis"
)

// layoutHarness is a session harness whose store keeps sessions in layout (skipped where the
// backend cannot host it); its service keys its secrets with h.hasher.
func layoutHarness(t *testing.T, b testredis.Backend, layout sessionstore.SessionLayout) *harness {
	t.Helper()
	h := newHarness(t, b, func(h *harness, d *Deps) {
		if err := sessionstore.Hosts(h.store.Caps, layout); err != nil {
			t.Skipf("%s: %v", layout, err)
		}
		svc, _ := newSessionServiceKeyed(t, h.store, h.prefix, h.hasher, func(o *sessionstore.SessionOptions) { o.Layout = layout })
		d.Sessions, d.SessionAuth = svc, svc
	})
	return h
}

var sessionLayouts = []sessionstore.SessionLayout{sessionstore.LayoutPerUser, sessionstore.LayoutPerSession}

func b64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// forgeSession writes a complete MFA-level session of alice (tag) for tenant acme straight into
// Redis, as someone with write access to Redis but not the gateway's HMAC key would: every field
// a gateway writes, in the layout's shape, under part, with verifierMac mac ("" leaves it out;
// per user the live marker holds the creation, the MAC and the deadline:
// "<createdAtMs>.<verifierMac>.<absoluteExpiresAtMs>").
func (h *harness) forgeSession(t *testing.T, ref session.Ref, mac string) {
	t.Helper()
	ctx := context.Background()
	c := h.store.Client
	keys := repo.Keys{Prefix: h.prefix}
	now := time.Now().UnixMilli()
	abs := strconv.FormatInt(now+int64(time.Hour/time.Millisecond), 10)
	nowS := strconv.FormatInt(now, 10)
	fields := map[string]string{"status": "MFA_VERIFIED", "authLevel": "MFA", "createdAtMs": nowS, "updatedAtMs": nowS,
		"mfaVerifiedAtMs": nowS, "absoluteExpiresAtMs": abs}
	if mac != "" {
		fields["verifierMac"] = mac
	}
	user := map[string]string{"userId": "alice", "tenantId": "acme"}
	userKey := sessionstore.UserSessionsKey(keys, ref.Tag)
	perUser, err := c.Do(ctx, c.B().Exists().Key(userKey).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if perUser == 1 {
		cmd := c.B().Hset().Key(userKey).FieldValue()
		for k, v := range user {
			cmd = cmd.FieldValue(k, v)
		}
		fields["live"] = nowS + "." + mac + "." + abs
		delete(fields, "createdAtMs")
		delete(fields, "absoluteExpiresAtMs")
		delete(fields, "verifierMac")
		var names []string
		for k, v := range fields {
			cmd = cmd.FieldValue(ref.Part+":"+k, v)
			names = append(names, ref.Part+":"+k)
		}
		if err := c.Do(ctx, cmd.Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, c.B().Hpexpire().Key(userKey).Milliseconds(int64(time.Hour/time.Millisecond)).Fields().Numfields(int64(len(names))).Field(names...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		return
	}
	user["schemaVersion"] = strconv.Itoa(repo.SchemaVersion)
	key := sessionstore.SessionKey(keys, ref)
	cmd := c.B().Hset().Key(key).FieldValue()
	for k, v := range user {
		cmd = cmd.FieldValue(k, v)
	}
	for k, v := range fields {
		cmd = cmd.FieldValue(k, v)
	}
	if err := c.Do(ctx, cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, c.B().Pexpire().Key(key).Milliseconds(int64(time.Hour/time.Millisecond)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// readField reads a session's field as the layout stores it (per user, verifierMac from the
// live marker).
func (h *harness) readField(t *testing.T, ref session.Ref, name string) string {
	t.Helper()
	ctx := context.Background()
	c := h.store.Client
	keys := repo.Keys{Prefix: h.prefix}
	wire := name
	if name == "verifierMac" {
		wire = "live"
	}
	v, err := c.Do(ctx, c.B().Hget().Key(sessionstore.UserSessionsKey(keys, ref.Tag)).Field(ref.Part+":"+wire).Build()).ToString()
	if err == nil {
		if wire == "live" { // <createdAtMs>.<verifierMac>[.<absoluteExpiresAtMs>]
			_, v, _ = strings.Cut(v, ".")
			v, _, _ = strings.Cut(v, ".")
		}
		return v
	}
	v, _ = c.Do(ctx, c.B().Hget().Key(sessionstore.SessionKey(keys, ref)).Field(name).Build()).ToString()
	return v
}

// Whoever can write Redis but does not hold GATEWAY_HMAC_KEY cannot make a session: a session
// written straight into Redis (the security review's single HSET, in each layout) is refused,
// whatever the key and the stored verifier MAC it tried. The last case, a forged hash with the
// MAC computed under the gateway's key, is the control that the forgery is otherwise complete.
func TestForgedSessionRefused(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, layout := range sessionLayouts {
			t.Run(b.Name+"/"+string(layout), func(t *testing.T) {
				t.Parallel()
				h := layoutHarness(t, b, layout)
				real := h.createSession("acme", "alice", nil)
				ref, _ := session.ParseID(real.SessionId)
				stolen := h.readField(t, ref, "verifierMac")

				// The review's forgery: a token whose key is the first 108 bits of its SHA-256.
				old := "hgs_" + ref.Tag + "_" + b64(32)
				h.forgeSession(t, session.Ref{Tag: ref.Tag, Part: sha(old)[:session.PartLen]}, "")
				wantProblem(t, h.do("GET", "/v1/authorize", nil, "X-Session-Token", old), 401, "invalid-credentials")

				for name, mac := range map[string]func(id, verifier, token string) string{
					"none":                     func(string, string, string) string { return "" },
					"sha256(verifier)":         func(_, v, _ string) string { return sha(v)[:22] },
					"sha256(id+verifier)":      func(id, v, _ string) string { return sha(id + v)[:22] },
					"sha256(token)":            func(_, _, tok string) string { return sha(tok)[:22] },
					"another session's MAC":    func(string, string, string) string { return stolen },
					"HMAC under a guessed key": func(id, v, _ string) string { return h.wrongKeyTag(id, v) },
				} {
					sel, verifier := b64(14)[:session.PartLen], b64(32)
					fref := session.Ref{Tag: ref.Tag, Part: sel}
					token := "hgs_" + ref.Tag + "_" + sel + "_" + verifier
					h.forgeSession(t, fref, mac(fref.ID(), verifier, token))
					for _, path := range []string{"/v1/authorize?level=MFA", "/v1/session"} {
						if rec := h.do("GET", path, nil, "X-Session-Token", token); rec.Code != 401 {
							t.Fatalf("forged (%s) %s: %d %s", name, path, rec.Code, rec.Body)
						}
					}
				}
				if stolen == "" {
					t.Fatalf("the real session stores no verifierMac")
				}
				// The same rows with the gateway's MAC: accepted, so only the MAC refused them.
				sel, verifier := b64(14)[:session.PartLen], b64(32)
				fref := session.Ref{Tag: ref.Tag, Part: sel}
				h.forgeSession(t, fref, h.hasher.Tag("session-verifier", 16, fref.Tag, fref.Part, verifier))
				if rec := h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", "hgs_"+ref.Tag+"_"+sel+"_"+verifier); rec.Code != 200 {
					t.Fatalf("control (the gateway's own MAC): %d %s", rec.Code, rec.Body)
				}
				if rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", real.Token); rec.Code != 200 {
					t.Fatalf("the real session: %d %s", rec.Code, rec.Body)
				}
			})
		}
	}
}

// wrongKeyTag is the gateway's MAC rule under another key.
func (h *harness) wrongKeyTag(id, verifier string) string {
	ref, _ := session.ParseID(id)
	other, _, err := keyhash.Generate()
	if err != nil {
		h.t.Fatal(err)
	}
	return other.Tag("session-verifier", 16, ref.Tag, ref.Part, verifier)
}

// A session keeps its id for life: rotation and MFA step-up replace its token, never its id.
// The old tokens are refused, a replayed verify answers 410 (its challenge was used), the
// per-session limit and DELETE by the first id still reach the session.
func TestRotationAndStepUpKeepSessionID(t *testing.T) {
	t.Parallel()
	for _, b := range testredis.Backends() {
		for _, layout := range sessionLayouts {
			t.Run(b.Name+"/"+string(layout), func(t *testing.T) {
				t.Parallel()
				h := layoutHarness(t, b, layout)
				created := h.createSession("acme", "alice", nil)
				id := created.SessionId
				authz := func(token string) int {
					rec := h.do("GET", "/v1/authorize", nil, "X-Session-Token", token)
					if rec.Code == 200 && rec.Header().Get("X-Auth-Session") != id {
						t.Fatalf("X-Auth-Session %q, want %q", rec.Header().Get("X-Auth-Session"), id)
					}
					return rec.Code
				}

				rec := h.do("POST", "/v1/sessions/"+id+"/rotate", nil, "Authorization", h.bearer("acme", "sessions:write"))
				var rot SessionToken
				decode(t, rec, &rot)
				if rec.Code != 200 || rot.SessionId != id || rot.Token == created.Token {
					t.Fatalf("rotate: %d %s (id %s)", rec.Code, rec.Body, id)
				}
				if authz(created.Token) != 401 || authz(rot.Token) != 200 {
					t.Fatalf("after rotate: old %d, new %d", authz(created.Token), authz(rot.Token))
				}

				c := h.challenge("acme", id)
				rec = h.verify("acme", id, c.ChallengeId, c.Code)
				var up MfaVerified
				decode(t, rec, &up)
				if rec.Code != 200 || up.SessionId != id || up.Token == rot.Token {
					t.Fatalf("verify: %d %s (id %s)", rec.Code, rec.Body, id)
				}
				if authz(rot.Token) != 401 || authz(up.Token) != 200 {
					t.Fatalf("after step-up: old %d, new %d", authz(rot.Token), authz(up.Token))
				}
				if rec := h.do("GET", "/v1/authorize?level=MFA", nil, "X-Session-Token", up.Token); rec.Code != 200 {
					t.Fatalf("MFA level after step-up: %d %s", rec.Code, rec.Body)
				}
				wantProblem(t, h.verify("acme", id, c.ChallengeId, c.Code), 410, "challenge-gone")

				rec = h.do("GET", "/v1/sessions/"+id, nil, "Authorization", h.bearer("acme", "sessions:read"))
				var full Session
				decode(t, rec, &full)
				if rec.Code != 200 || full.SessionId != id || full.AuthLevel != AuthLevelMFA {
					t.Fatalf("get by the first id: %d %s", rec.Code, rec.Body)
				}
				if rec := h.do("DELETE", "/v1/sessions/"+id, nil, "Authorization", h.bearer("acme", "sessions:write")); rec.Code != 204 {
					t.Fatalf("delete by the first id: %d %s", rec.Code, rec.Body)
				}
				if authz(up.Token) != 401 {
					t.Fatalf("the session outlived DELETE by its first id")
				}
			})
		}
	}
}

// The per-session request limit follows the session across a rotation: it is keyed by the
// session id, which the rotation keeps, so a new token does not start a fresh count.
func TestSessionRateLimitFollowsRotation(t *testing.T) {
	t.Parallel()
	h := limitedHarness(t, testredis.Backends()[0], "100/1m", "100/1m", "3/1m")
	created := h.createSession("acme", "alice", nil)
	for i := range 2 {
		if rec := h.do("GET", "/v1/session/devices", nil, "X-Session-Token", created.Token); rec.Code != 200 {
			t.Fatalf("devices %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := h.do("POST", "/v1/sessions/"+created.SessionId+"/rotate", nil, "Authorization", h.bearer("acme", "sessions:write"))
	var rot SessionToken
	decode(t, rec, &rot)
	if rec.Code != 200 {
		t.Fatalf("rotate: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/v1/session/devices", nil, "X-Session-Token", rot.Token); rec.Code != 200 {
		t.Fatalf("devices with the rotated token: %d %s", rec.Code, rec.Body)
	}
	wantProblem(t, h.do("GET", "/v1/session/devices", nil, "X-Session-Token", rot.Token), 429, "rate-limited")
}
