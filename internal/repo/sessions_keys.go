package repo

import "strings"

// Session key patterns (docs/KEYS.md, "Sessions"). Every key of one user carries the user's
// tag — a keyed hash of tenant and user id — so the user's sessions, device index, fallback
// challenge keys and MFA attempt counter live in one slot.
const (
	// sessKeyType is short ("sess", not "session") so that a session key, 44 bytes with the
	// default prefix, fits jemalloc's 48-byte class: 16 bytes less per session
	// (docs/PERFORMANCE.md, "Session hash").
	sessKeyType      = "sess"
	sessKeyDevices   = "sessions"
	sessKeyChallenge = "mfa"
	// MFAPolicyName names the MFA attempt counter and its RateLimit headers.
	MFAPolicyName = "mfa"
)

// SessionRef locates a session: the user's 12-character tag and the 18-character part derived
// from the token's SHA-256 (its first 108 bits). The session id is "s_" + Tag + "_" + Part.
type SessionRef struct {
	Tag  string
	Part string
}

// Lengths of the session id's parts.
const (
	SessionTagLen  = 12
	SessionPartLen = 18
	sessIDLen      = 2 + SessionTagLen + 1 + SessionPartLen
)

// ID is the public session id.
func (r SessionRef) ID() string { return "s_" + r.Tag + "_" + r.Part }

// ParseSessionID splits a session id into its reference; ok is false for anything that is not
// s_<12 base64url>_<22 base64url>. (The tag may itself contain '_', so positions, not
// separators, delimit the parts.)
func ParseSessionID(id string) (SessionRef, bool) {
	if len(id) != sessIDLen || !strings.HasPrefix(id, "s_") || id[2+SessionTagLen] != '_' {
		return SessionRef{}, false
	}
	r := SessionRef{Tag: id[2 : 2+SessionTagLen], Part: id[3+SessionTagLen:]}
	if !sessB64URL(r.Tag) || !sessB64URL(r.Part) {
		return SessionRef{}, false
	}
	return r, true
}

// sessB64URL reports whether s is non-empty and only base64url characters (no padding).
func sessB64URL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (r *Sessions) sessionKey(ref SessionRef) string { return SessionKey(r.keys, ref) }

// SessionKey is the Redis key of the session ref under k (for tools and tests that look at
// the keyspace directly).
func SessionKey(k Keys, ref SessionRef) string   { return k.Key(sessKeyType, ref.Tag, ref.Part) }
func (r *Sessions) devicesKey(tag string) string { return r.keys.Key(sessKeyDevices, tag) }
func (r *Sessions) challengeKey(ref SessionRef) string {
	return r.keys.Key(sessKeyChallenge, ref.Tag, ref.Part)
}

// devicesKeyPattern names the device index in logs.
func (r *Sessions) devicesKeyPattern() string {
	return r.keys.Prefix + ":v1:" + sessKeyDevices + ":{<userTag>}"
}

// sessionKeyPattern is what logs name instead of a key.
func (r *Sessions) sessionKeyPattern() string {
	return r.keys.Prefix + ":v1:" + sessKeyType + ":{<userTag>}:<idPart>"
}
