package sessions

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Token format: "hgs_" + the user's 12-character tag + "_" + 43 characters (base64url of 256
// random bits). The tag makes every key of the user share one hash tag; the random part is the
// secret. The token is never stored, nor any hash of it: the session id is "s_" + tag + "_" +
// the first 18 base64url characters (108 bits) of the token's SHA-256, and the session's key
// derives from the id, so finding the key proves the token. Forging a token for a live session
// takes a second preimage on 108 bits with the victim's tag fixed: about 2^102 SHA-256
// evaluations against a user's 50 sessions together (2^98 at the bound of 1,000), within the
// sessions' lifetime — out of reach by many orders of magnitude. (The id was 128 bits; 108 keeps the key within
// 44 bytes, a smaller memory class: docs/PERFORMANCE.md.)
const (
	tokenPrefix    = "hgs_"
	tokenRandBytes = 32
	tokenRandLen   = 43
	// TokenLen is the length of every session token.
	TokenLen = len(tokenPrefix) + session.TagLen + 1 + tokenRandLen
)

// newToken returns a fresh token for the user with tag and its session reference.
func newToken(tag string) (token string, ref session.Ref, err error) {
	var b [tokenRandBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", session.Ref{}, fmt.Errorf("sessions: random token: %w", err)
	}
	token = tokenPrefix + tag + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	ref, _ = refOf(token, tag)
	return token, ref, nil
}

// parseToken checks the token's shape and derives its reference and the session id
// (ref.ID(), made in the same allocation as ref.Part). It says nothing about whether the
// session exists.
func parseToken(token string) (ref session.Ref, id string, ok bool) {
	if len(token) != TokenLen || token[:len(tokenPrefix)] != tokenPrefix || token[len(tokenPrefix)+session.TagLen] != '_' {
		return session.Ref{}, "", false
	}
	tag := token[len(tokenPrefix) : len(tokenPrefix)+session.TagLen]
	random := token[len(tokenPrefix)+session.TagLen+1:]
	if !b64url(tag) || !b64url(random) {
		return session.Ref{}, "", false
	}
	// The last character of 43 base64url characters carries 2 padding bits: only canonical
	// encodings (those bits zero) are tokens, so one secret has exactly one spelling.
	if strings.IndexByte(b64urlAlphabet, random[len(random)-1])%4 != 0 {
		return session.Ref{}, "", false
	}
	ref, id = refOf(token, tag)
	return ref, id, true
}

// refOf is the reference of the session with token (whose user has tag) and its id.
func refOf(token, tag string) (session.Ref, string) {
	var sum [sha256.Size]byte
	if len(token) != TokenLen {
		sum = sha256.Sum256([]byte(token))
	} else {
		var in [TokenLen]byte // hashed from the stack: no copy of the token on the heap
		sum = sha256.Sum256(in[:copy(in[:], token)])
	}
	// 18 base64url characters = the first 108 bits (of the 14 bytes encoded).
	var enc [19]byte
	base64.RawURLEncoding.Encode(enc[:], sum[:14])
	id := "s_" + tag + "_" + string(enc[:session.PartLen]) // ref.ID(), one allocation
	return session.Ref{Tag: tag, Part: id[len(id)-session.PartLen:]}, id
}

const b64urlAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func b64url(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}
