// Package keyhash derives the gateway's keyed, one-way identifiers: user and tenant tags for
// Redis hash tags, MFA code MACs, and identifiers in counter keys. Raw ids and secrets never
// reach Redis; these do.
package keyhash

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// MinKeyBytes is the shortest accepted key.
const MinKeyBytes = 32

// Hasher computes HMAC-SHA256 with domain separation: every use names its purpose, and parts
// are length-prefixed so ("ab","c") and ("a","bc") differ.
type Hasher struct{ key []byte }

// ErrShortKey reports a key under MinKeyBytes.
var ErrShortKey = errors.New("keyhash: key must be at least 32 bytes")

// New returns a hasher over key (copied).
func New(key []byte) (*Hasher, error) {
	if len(key) < MinKeyBytes {
		return nil, ErrShortKey
	}
	return &Hasher{key: append([]byte(nil), key...)}, nil
}

// Parse decodes a base64 (standard or URL, padded or not) key.
func Parse(s string) (*Hasher, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return New(b)
		}
	}
	return nil, errors.New("keyhash: key is not base64")
}

// Generate returns a hasher over a fresh random key (embedded mode) and the key in base64.
func Generate() (*Hasher, string, error) {
	b := make([]byte, MinKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, "", err
	}
	h, err := New(b)
	return h, base64.StdEncoding.EncodeToString(b), err
}

// Sum is HMAC-SHA256(key, purpose || parts...).
func (h *Hasher) Sum(purpose string, parts ...string) []byte {
	m := hmac.New(sha256.New, h.key)
	var n [4]byte
	for _, p := range append([]string{purpose}, parts...) {
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// Tag is the base64url (no padding) of the first n bytes of Sum; n=9 gives 12 characters.
// Tags are safe inside Redis hash tags: no '{', '}' or ':'.
func (h *Hasher) Tag(purpose string, n int, parts ...string) string {
	s := h.Sum(purpose, parts...)
	if n > len(s) {
		n = len(s)
	}
	return base64.RawURLEncoding.EncodeToString(s[:n])
}

// Equal compares two MACs in constant time.
func Equal(a, b []byte) bool { return hmac.Equal(a, b) }
