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
	"hash"
	"io"
	"strings"
	"sync"
)

// MinKeyBytes is the shortest accepted key.
const MinKeyBytes = 32

// Hasher computes HMAC-SHA256 with domain separation: every use names its purpose, and parts
// are length-prefixed so ("ab","c") and ("a","bc") differ.
type Hasher struct {
	key  []byte
	pool sync.Pool // of hash.Hash (HMAC-SHA256 over key): hot paths hash on every request
}

// ErrShortKey reports a key under MinKeyBytes.
var ErrShortKey = errors.New("keyhash: key must be at least 32 bytes")

// New returns a hasher over key (copied).
func New(key []byte) (*Hasher, error) {
	if len(key) < MinKeyBytes {
		return nil, ErrShortKey
	}
	h := &Hasher{key: append([]byte(nil), key...)}
	h.pool.New = func() any { return hmac.New(sha256.New, h.key) }
	return h, nil
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
	m := h.pool.Get().(hash.Hash)
	m.Reset()
	var n [4]byte
	write := func(p string) {
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		_, _ = io.WriteString(m, p)
	}
	write(purpose)
	for _, p := range parts {
		write(p)
	}
	out := m.Sum(make([]byte, 0, sha256.Size))
	h.pool.Put(m)
	return out
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
