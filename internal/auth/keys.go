package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Key is one Ed25519 key of a [KeySet].
//
// Key implements fmt.Formatter, fmt.Stringer and slog.LogValuer so that
// printing or logging it never reveals the private half.
type Key struct {
	// ID is the key's RFC 7638 JWK thumbprint (base64url, 43 chars), used as
	// the JWS "kid" header.
	ID string
	// Private is nil for verify-only keys.
	Private ed25519.PrivateKey `json:"-"`
	// Public is always set.
	Public ed25519.PublicKey
}

// CanSign reports whether the key has private material.
func (k Key) CanSign() bool { return len(k.Private) == ed25519.PrivateKeySize }

// String describes the key without private material.
func (k Key) String() string {
	mode := "verify-only"
	if k.CanSign() {
		mode = "signing, private=***"
	}
	return fmt.Sprintf("Key{kid=%s %s}", k.ID, mode)
}

// Format implements fmt.Formatter: every verb, including %#v and %x, prints
// the masked String form.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue implements slog.LogValuer.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// KeySet is an ordered, immutable set of Ed25519 keys, newest first. The first
// key signs (if it has private material); all keys verify. A KeySet is safe
// for concurrent use.
type KeySet struct {
	keys  []Key
	byKID map[string]int
}

// NewKeySet builds a KeySet from keys, newest first. Each key's ID is
// (re)computed from its public key; Public may be omitted when Private is set.
// Duplicate keys are rejected.
func NewKeySet(keys ...Key) (*KeySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("auth: key set is empty")
	}
	ks := &KeySet{keys: make([]Key, 0, len(keys)), byKID: make(map[string]int, len(keys))}
	for i, k := range keys {
		var nk Key
		switch {
		case k.Private != nil:
			if len(k.Private) != ed25519.PrivateKeySize {
				return nil, fmt.Errorf("auth: key %d: private key has wrong length", i+1)
			}
			// Re-derive from the seed so a malformed seed||pub pair cannot
			// sign with one key while advertising another.
			priv := ed25519.NewKeyFromSeed(k.Private.Seed())
			pub := priv.Public().(ed25519.PublicKey)
			if k.Public != nil && !pub.Equal(k.Public) {
				return nil, fmt.Errorf("auth: key %d: public key does not match private key", i+1)
			}
			nk = Key{Private: priv, Public: pub}
		case k.Public != nil:
			if len(k.Public) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("auth: key %d: public key has wrong length", i+1)
			}
			nk = Key{Public: clone(k.Public)}
		default:
			return nil, fmt.Errorf("auth: key %d: no key material", i+1)
		}
		nk.ID = Thumbprint(nk.Public)
		if _, dup := ks.byKID[nk.ID]; dup {
			return nil, fmt.Errorf("auth: key %d: duplicate key (kid %s)", i+1, nk.ID)
		}
		ks.byKID[nk.ID] = len(ks.keys)
		ks.keys = append(ks.keys, nk)
	}
	return ks, nil
}

// GenerateKeySet returns a KeySet holding one fresh random signing key
// (development / embedded mode: tokens do not survive a restart).
func GenerateKeySet() (*KeySet, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("auth: generate key: %w", err)
	}
	return NewKeySet(Key{Private: priv})
}

// ParseKeys parses a comma-separated key specification, newest first. Each
// entry is one of:
//
//   - a base64 (standard or URL alphabet, padded or not) 32-byte Ed25519
//     seed: a signing key;
//   - "pub:" followed by a base64 32-byte Ed25519 public key: verify only;
//   - "file:" followed by the path of a PEM file holding one or more
//     PKCS#8 "PRIVATE KEY" or PKIX "PUBLIC KEY" blocks, newest first.
//
// Surrounding whitespace and empty entries are ignored. Errors identify the
// offending entry by position and never echo key material.
func ParseKeys(spec string) (*KeySet, error) {
	var keys []Key
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		n := i + 1
		switch {
		case strings.HasPrefix(entry, "file:"):
			fk, err := readPEMKeys(strings.TrimPrefix(entry, "file:"))
			if err != nil {
				return nil, fmt.Errorf("auth: key entry %d: %w", n, err)
			}
			keys = append(keys, fk...)
		case strings.HasPrefix(entry, "pub:"):
			b, err := decode32(strings.TrimPrefix(entry, "pub:"))
			if err != nil {
				return nil, fmt.Errorf("auth: key entry %d (public key): %w", n, err)
			}
			keys = append(keys, Key{Public: ed25519.PublicKey(b)})
		default:
			b, err := decode32(entry)
			if err != nil {
				return nil, fmt.Errorf("auth: key entry %d (seed): %w", n, err)
			}
			keys = append(keys, Key{Private: ed25519.NewKeyFromSeed(b)})
			clear(b)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("auth: no keys configured")
	}
	return NewKeySet(keys...)
}

var (
	errBadBase64 = errors.New("not valid base64")
	errBadLength = errors.New("must decode to exactly 32 bytes")
)

// decode32 decodes base64 in any of the four common variants and requires
// exactly 32 bytes. Errors are generic so they cannot leak the input.
func decode32(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		b, err := enc.Strict().DecodeString(s)
		if err != nil {
			continue
		}
		if len(b) != 32 {
			clear(b)
			return nil, errBadLength
		}
		return b, nil
	}
	return nil, errBadBase64
}

func readPEMKeys(path string) ([]Key, error) {
	if path == "" {
		return nil, errors.New("empty file path")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	defer clear(data)
	var keys []Key
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		switch block.Type {
		case "PRIVATE KEY":
			priv, err := pemKey[ed25519.PrivateKey](block.Bytes, x509.ParsePKCS8PrivateKey, "PKCS#8 private", "private")
			clear(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: PEM block %d: %w", path, n, err)
			}
			keys = append(keys, Key{Private: priv})
		case "PUBLIC KEY":
			pub, err := pemKey[ed25519.PublicKey](block.Bytes, x509.ParsePKIXPublicKey, "PKIX public", "public")
			if err != nil {
				return nil, fmt.Errorf("%s: PEM block %d: %w", path, n, err)
			}
			keys = append(keys, Key{Public: pub})
		default:
			return nil, fmt.Errorf("%s: PEM block %d: unsupported type %q", path, n, block.Type)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no PEM keys found", path)
	}
	return keys, nil
}

// pemKey reads a PEM block's DER with parse into an Ed25519 key of type K: "invalid <format>
// key" when parse refuses it, "not an Ed25519 <kind> key" when it is another algorithm's.
func pemKey[K ed25519.PrivateKey | ed25519.PublicKey](der []byte, parse func([]byte) (any, error), format, kind string) (K, error) {
	k, err := parse(der)
	if err != nil {
		return nil, fmt.Errorf("invalid %s key", format)
	}
	key, ok := k.(K)
	if !ok {
		return nil, fmt.Errorf("not an Ed25519 %s key", kind)
	}
	return key, nil
}

// Thumbprint returns the RFC 7638 JWK thumbprint (SHA-256, base64url without
// padding) of an Ed25519 public key, as defined for OKP keys by RFC 8037.
func Thumbprint(pub ed25519.PublicKey) string {
	// Required members in lexicographic order, no whitespace (RFC 7638 §3.2).
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signer returns the signing key: the first key, if it has private material.
func (ks *KeySet) signer() (Key, bool) {
	if ks == nil || len(ks.keys) == 0 || !ks.keys[0].CanSign() {
		return Key{}, false
	}
	return ks.keys[0], true
}

// CanSign reports whether the first (newest) key has private material.
func (ks *KeySet) CanSign() bool {
	_, ok := ks.signer()
	return ok
}

// SigningKID returns the kid of the signing key, or "" if the set cannot sign.
func (ks *KeySet) SigningKID() string {
	k, _ := ks.signer()
	return k.ID
}

// KIDs returns the key IDs, newest first.
func (ks *KeySet) KIDs() []string {
	ids := make([]string, len(ks.keys))
	for i, k := range ks.keys {
		ids[i] = k.ID
	}
	return ids
}

// PublicKey returns the verification key with the given kid.
func (ks *KeySet) PublicKey(kid string) (ed25519.PublicKey, bool) {
	i, ok := ks.byKID[kid]
	if !ok {
		return nil, false
	}
	return ks.keys[i].Public, true
}

// PublicOnly returns a copy of the set with all private material removed.
func (ks *KeySet) PublicOnly() *KeySet {
	out := &KeySet{keys: make([]Key, len(ks.keys)), byKID: make(map[string]int, len(ks.keys))}
	for i, k := range ks.keys {
		out.keys[i] = Key{ID: k.ID, Public: k.Public}
		out.byKID[k.ID] = i
	}
	return out
}

// JWK is the public RFC 8037 JSON Web Key form of a [Key].
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKS returns the JSON Web Key Set of the public keys, newest first:
// {"keys":[{"kty":"OKP","crv":"Ed25519","x":...,"kid":...,"use":"sig","alg":"EdDSA"}]}.
// It never contains private material.
func (ks *KeySet) JWKS() ([]byte, error) {
	set := struct {
		Keys []JWK `json:"keys"`
	}{Keys: make([]JWK, len(ks.keys))}
	for i, k := range ks.keys {
		set.Keys[i] = JWK{
			Kty: "OKP",
			Crv: "Ed25519",
			X:   base64.RawURLEncoding.EncodeToString(k.Public),
			Kid: k.ID,
			Use: "sig",
			Alg: "EdDSA",
		}
	}
	return json.Marshal(set)
}

// SeedString returns the SECRET seed of the signing key, base64url encoded,
// in the form ParseKeys accepts, or "" if the set cannot sign.
//
// SECRET: it exists only to print a one-time configuration hint (e.g. after
// GenerateKeySet in dev mode). Never log it or include it in errors.
func (ks *KeySet) SeedString() string {
	k, ok := ks.signer()
	if !ok {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(k.Private.Seed())
}

// String describes the set without private material. String, Format and
// LogValue have value receivers so that printing a dereferenced KeySet is
// masked too.
func (ks KeySet) String() string {
	var b strings.Builder
	b.WriteString("KeySet[")
	for i, k := range ks.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.String())
	}
	b.WriteString("]")
	return b.String()
}

// Format implements fmt.Formatter: every verb prints the masked String form.
func (ks KeySet) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, ks.String()) }

// LogValue implements slog.LogValuer.
func (ks KeySet) LogValue() slog.Value { return slog.StringValue(ks.String()) }

func clone[T ~[]byte](b T) T { return append(T(nil), b...) }
