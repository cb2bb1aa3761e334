// Package keyhash derives the gateway's keyed, one-way identifiers: user and tenant tags for
// Redis hash tags, MFA code MACs, and identifiers in counter keys. Raw ids and secrets never
// reach Redis; these do.
package keyhash

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strings"
	"sync"
	"sync/atomic"
)

// MinKeyBytes is the shortest accepted key.
const MinKeyBytes = 32

// Hasher computes HMAC-SHA256 with domain separation: every use names its purpose, and parts
// are length-prefixed so ("ab","c") and ("a","bc") differ.
type Hasher struct {
	key  []byte
	pool sync.Pool // of *state (HMAC-SHA256 over key): hot paths hash on every request
	// tenantTags memoizes TenantTag (tenant → tag), up to maxTenantTags tenants.
	tenantTags  sync.Map
	nTenantTags atomic.Int64
}

// ErrShortKey reports a key under MinKeyBytes.
var ErrShortKey = errors.New("keyhash: key must be at least 32 bytes")

// New returns a hasher over key (copied).
func New(key []byte) (*Hasher, error) {
	if len(key) < MinKeyBytes {
		return nil, ErrShortKey
	}
	h := &Hasher{key: append([]byte(nil), key...)}
	h.pool.New = func() any { return &state{m: hmac.New(sha256.New, h.key)} }
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

// state is one pooled HMAC with the scratch space a computation needs, so hashing allocates
// nothing but its result.
type state struct {
	m   hash.Hash
	buf []byte // the framed input
	sum [sha256.Size]byte
	enc [43]byte // base64url of a whole sum, unpadded
}

// mac leaves HMAC-SHA256(key, purpose || parts...) in st.sum; every string is framed by its
// length, so the parts' boundaries count.
func (h *Hasher) mac(purpose string, parts []string) *state {
	st := h.pool.Get().(*state)
	st.m.Reset()
	st.buf = frame(st.buf[:0], purpose)
	for _, p := range parts {
		st.buf = frame(st.buf, p)
	}
	st.m.Write(st.buf)
	st.m.Sum(st.sum[:0])
	if cap(st.buf) > 4096 { // do not keep a large input's buffer in the pool
		st.buf = nil
	}
	return st
}

func frame(b []byte, p string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(p))), p...)
}

// Sum is HMAC-SHA256(key, purpose || parts...).
func (h *Hasher) Sum(purpose string, parts ...string) []byte {
	st := h.mac(purpose, parts)
	out := append(make([]byte, 0, sha256.Size), st.sum[:]...)
	h.pool.Put(st)
	return out
}

// Tag is the base64url (no padding) of the first n bytes of Sum; n=9 gives 12 characters.
// Tags are safe inside Redis hash tags: no '{', '}' or ':'.
func (h *Hasher) Tag(purpose string, n int, parts ...string) string {
	st := h.mac(purpose, parts)
	out := string(st.encode(n))
	h.pool.Put(st)
	return out
}

// AppendTag appends Tag(purpose, n, parts...) to dst: a caller that builds a larger string
// around a tag (the session hot path: the session id and its verifier's MAC) makes one
// allocation, not two.
func (h *Hasher) AppendTag(dst []byte, purpose string, n int, parts ...string) []byte {
	st := h.mac(purpose, parts)
	dst = append(dst, st.encode(n)...)
	h.pool.Put(st)
	return dst
}

// TagEqual reports, in constant time and without allocating, whether tag is
// Tag(purpose, n, parts...): the check the session hot path makes on every request.
func (h *Hasher) TagEqual(tag string, purpose string, n int, parts ...string) bool {
	st := h.mac(purpose, parts)
	enc := st.encode(n)
	ok := len(enc) == len(tag) && subtle.ConstantTimeCompare(enc, []byte(tag)) == 1
	h.pool.Put(st)
	return ok
}

// encode is the base64url of the first n bytes of st.sum, in st's own buffer.
func (st *state) encode(n int) []byte {
	n = min(max(n, 0), len(st.sum))
	out := st.enc[:base64.RawURLEncoding.EncodedLen(n)]
	base64.RawURLEncoding.Encode(out, st.sum[:n])
	return out
}

// Tenant tags: every key of one tenant's tokens, cases and Idempotency-Key markers carries the
// tenant's tag as its Redis Cluster hash tag, so a tenant's multi-key scripts stay in one slot.
const (
	tenantTagPurpose = "tenant"
	tenantTagBytes   = 9 // 12 base64url characters
	// maxTenantTags bounds the memoized tenant tags (about 200 B each); past it the rest are
	// computed each time.
	maxTenantTags = 4096
)

// TenantTag is the tenant's hash tag, Tag("tenant", 9, tenant): the only way the gateway
// computes it. The per-request token check needs it for every request, so tags are memoized (a
// keyed HMAC per request would cost more than the cached read itself).
func (h *Hasher) TenantTag(tenant string) string {
	if v, ok := h.tenantTags.Load(tenant); ok {
		return v.(string)
	}
	t := h.Tag(tenantTagPurpose, tenantTagBytes, tenant)
	if h.nTenantTags.Load() < maxTenantTags {
		if _, loaded := h.tenantTags.LoadOrStore(tenant, t); !loaded {
			h.nTenantTags.Add(1)
		}
	}
	return t
}
