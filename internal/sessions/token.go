package sessions

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/hashgate/hashgate/internal/repo"
)

// Token format: "hgs_" + the user's 12-character tag + "_" + 43 characters (base64url of 256
// random bits). The tag makes every key of the user share one hash tag; the random part is the
// secret. Only the token's SHA-256 is stored; the session id is "s_" + tag + "_" + base64url
// of the first 16 bytes of that SHA-256, and the session's key derives from the id.
const (
	tokenPrefix    = "hgs_"
	tokenRandBytes = 32
	tokenRandLen   = 43
	// TokenLen is the length of every session token.
	TokenLen = len(tokenPrefix) + repo.SessionTagLen + 1 + tokenRandLen
)

// newToken returns a fresh token for the user with tag, its session reference and the
// base64url SHA-256 to store.
func newToken(tag string) (token string, ref repo.SessionRef, hash string, err error) {
	var b [tokenRandBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", repo.SessionRef{}, "", fmt.Errorf("sessions: random token: %w", err)
	}
	token = tokenPrefix + tag + "_" + base64.RawURLEncoding.EncodeToString(b[:])
	ref, hash = refOf(token, tag)
	return token, ref, hash, nil
}

// parseToken checks the token's shape and derives its reference and stored hash. It says
// nothing about whether the session exists.
func parseToken(token string) (repo.SessionRef, string, bool) {
	if len(token) != TokenLen || token[:len(tokenPrefix)] != tokenPrefix || token[len(tokenPrefix)+repo.SessionTagLen] != '_' {
		return repo.SessionRef{}, "", false
	}
	tag := token[len(tokenPrefix) : len(tokenPrefix)+repo.SessionTagLen]
	random := token[len(tokenPrefix)+repo.SessionTagLen+1:]
	if !b64url(tag) || !b64url(random) {
		return repo.SessionRef{}, "", false
	}
	// The last character of 43 base64url characters carries 2 padding bits: only canonical
	// encodings are tokens, so one secret has exactly one spelling.
	if _, err := base64.RawURLEncoding.Strict().DecodeString(random); err != nil {
		return repo.SessionRef{}, "", false
	}
	ref, hash := refOf(token, tag)
	return ref, hash, true
}

func refOf(token, tag string) (repo.SessionRef, string) {
	sum := sha256.Sum256([]byte(token))
	return repo.SessionRef{Tag: tag, Part: base64.RawURLEncoding.EncodeToString(sum[:16])},
		base64.RawURLEncoding.EncodeToString(sum[:])
}

func b64url(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}
