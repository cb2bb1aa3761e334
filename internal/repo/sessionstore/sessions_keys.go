package sessionstore

import (
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

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

func (r *Sessions) sessionKey(ref session.Ref) string { return SessionKey(r.keys, ref) }

// SessionKey is the Redis key of the session ref under k (for tools and tests that look at
// the keyspace directly).
func SessionKey(k repo.Keys, ref session.Ref) string { return k.Key(sessKeyType, ref.Tag, ref.Part) }
func (r *Sessions) devicesKey(tag string) string     { return r.keys.Key(sessKeyDevices, tag) }
func (r *Sessions) challengeKey(ref session.Ref) string {
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

// CachedKeyPrefix is the key prefix of every session key, read through the client-side cache
// on the hot path: for broadcast tracking, a write to any key under it is pushed to every
// gateway.
func CachedKeyPrefix(prefix string) string { return prefix + ":v1:" + sessKeyType + ":" }

// userKey is the user's hash in the per-user layout (LayoutPerUser): the user's fields once,
// every session's as "<idPart>:<field>". It shares the "sess:" prefix with the per-session
// hashes, so broadcast tracking pushes its writes to every gateway.
func (r *Sessions) userKey(tag string) string { return UserSessionsKey(r.keys, tag) }

// UserSessionsKey is the per-user layout's hash of the user with tag under k (for tools and
// tests that look at the keyspace directly).
func UserSessionsKey(k repo.Keys, tag string) string { return k.Key(sessKeyType, tag) }

// userKeyPattern is what logs name instead of the user's hash.
func (r *Sessions) userKeyPattern() string {
	return r.keys.Prefix + ":v1:" + sessKeyType + ":{<userTag>}"
}
