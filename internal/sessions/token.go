package sessions

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Token format: "hgs_" + the user's 12-character tag + "_" + an 18-character selector + "_" + a
// 43-character verifier (base64url; the selector is 108 random bits, the verifier 256).
//
//   - The tag makes every key of the user share one hash tag.
//   - The selector names the session: its id is "s_" + tag + "_" + selector, and it is the same
//     for the session's life. It is not secret (ids appear in device lists and admin calls).
//   - The verifier is the secret. Rotation and MFA step-up replace it (a new token, the same
//     id). Redis keeps only verifierMAC: the first 16 bytes of HMAC-SHA256 under
//     GATEWAY_HMAC_KEY (purpose "session-verifier") of the id (its tag and selector) and the
//     verifier, so whoever
//     reads or writes Redis, without the key, can neither recover a token nor make a session
//     whose token the gateway accepts. Binding the id into the MAC keeps a stored MAC from being
//     copied to another session.
const (
	tokenPrefix      = "hgs_"
	selectorBytes    = 14 // encoded to 19 characters, of which the first 18 (108 bits) are kept
	verifierBytes    = 32
	verifierLen      = 43
	verifierPurpose  = "session-verifier"
	verifierMACBytes = 16
	// verifierMACLen is the length of a stored verifier MAC (base64url of 16 bytes).
	verifierMACLen = 22
	selectorAt     = len(tokenPrefix) + session.TagLen + 1
	verifierAt     = selectorAt + session.PartLen + 1
	// TokenLen is the length of every session token.
	TokenLen = verifierAt + verifierLen
	idLen    = 2 + session.TagLen + 1 + session.PartLen
)

// newToken returns a fresh token for the session ref (a new session: a fresh selector, when
// ref.Part is empty; a rotation or step-up: ref's own) and its verifier's MAC.
func newToken(h *keyhash.Hasher, ref session.Ref) (token string, next session.Ref, mac string, err error) {
	var b [selectorBytes + verifierBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", session.Ref{}, "", fmt.Errorf("sessions: random token: %w", err)
	}
	if ref.Part == "" {
		var sel [19]byte
		base64.RawURLEncoding.Encode(sel[:], b[:selectorBytes])
		ref.Part = string(sel[:session.PartLen])
	}
	verifier := base64.RawURLEncoding.EncodeToString(b[selectorBytes:])
	token = tokenPrefix + ref.Tag + "_" + ref.Part + "_" + verifier
	_, _, mac = credentialOf(h, token)
	return token, ref, mac, nil
}

// parseToken checks the token's shape and derives its session reference, the session id
// (ref.ID()) and the MAC of its verifier, the id and the MAC in one allocation. It says nothing
// about whether the session exists.
func parseToken(h *keyhash.Hasher, token string) (ref session.Ref, id, mac string, ok bool) {
	if len(token) != TokenLen || token[:len(tokenPrefix)] != tokenPrefix || token[selectorAt-1] != '_' || token[verifierAt-1] != '_' {
		return session.Ref{}, "", "", false
	}
	tag, sel, verifier := token[len(tokenPrefix):selectorAt-1], token[selectorAt:verifierAt-1], token[verifierAt:]
	if !session.B64URL(tag) || !session.B64URL(sel) || !session.B64URL(verifier) {
		return session.Ref{}, "", "", false
	}
	// The last character of 43 base64url characters carries 2 padding bits: only canonical
	// encodings (those bits zero) are tokens, so one secret has exactly one spelling.
	if strings.IndexByte(b64urlAlphabet, verifier[len(verifier)-1])%4 != 0 {
		return session.Ref{}, "", "", false
	}
	ref, id, mac = credentialOf(h, token)
	return ref, id, mac, true
}

// credentialOf is the reference, id and verifier MAC of a well-shaped token.
func credentialOf(h *keyhash.Hasher, token string) (session.Ref, string, string) {
	tag, sel, verifier := token[len(tokenPrefix):selectorAt-1], token[selectorAt:verifierAt-1], token[verifierAt:]
	var buf [idLen + verifierMACLen]byte
	b := append(append(append(append(buf[:0], "s_"...), tag...), '_'), sel...)
	b = h.AppendTag(b, verifierPurpose, verifierMACBytes, tag, sel, verifier) // (tag and selector: the id)
	both := string(b)                                                         // id and MAC: one allocation
	id := both[:idLen]
	return session.Ref{Tag: id[2 : 2+session.TagLen], Part: id[idLen-session.PartLen:]}, id, both[idLen:]
}

const b64urlAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
