// Package session is the session model that the session service (internal/sessions), its Redis
// store (internal/repo/sessionstore) and the authenticated principal (internal/auth) share: a
// session's view, the reference its token carries, statuses and authentication levels, the bounds
// of what a caller may store, and what the store takes and answers. It holds values and their
// rules only: no I/O, no secrets.
package session

import (
	"strings"
	"time"
)

// Statuses and authentication levels.
const (
	Active      = "ACTIVE"
	MFARequired = "MFA_REQUIRED"
	MFAVerified = "MFA_VERIFIED"
	LevelBasic  = "BASIC"
	LevelMFA    = "MFA"
)

// Bounds (bytes) of what a caller stores in a session.
const (
	MaxUserIDBytes      = 128
	MaxTenantBytes      = 128
	MaxDeviceLabelBytes = 256
)

// Ref locates a session: the user's 12-character tag and the token's 18-character selector
// (108 random bits), both carried in the clear by the token. The session id is "s_" + Tag +
// "_" + Part; it stays the session's for life (rotation and step-up replace only the token's
// verifier). Knowing a Ref proves nothing: the token's verifier does (Record.VerifierMAC).
type Ref struct {
	Tag  string
	Part string
}

// Lengths of the session id's parts.
const (
	TagLen  = 12
	PartLen = 18
	idLen   = 2 + TagLen + 1 + PartLen
)

// ID is the public session id.
func (r Ref) ID() string { return "s_" + r.Tag + "_" + r.Part }

// ParseID splits a session id into its reference; ok is false for anything that is not
// s_<12 base64url>_<18 base64url>. (The tag may itself contain '_', so positions, not
// separators, delimit the parts.)
func ParseID(id string) (Ref, bool) {
	if len(id) != idLen || !strings.HasPrefix(id, "s_") || id[2+TagLen] != '_' {
		return Ref{}, false
	}
	r := Ref{Tag: id[2 : 2+TagLen], Part: id[3+TagLen:]}
	if !B64URL(r.Tag) || !B64URL(r.Part) {
		return Ref{}, false
	}
	return r, true
}

// B64URL reports whether s is non-empty and only base64url characters (no padding): the
// alphabet of every id part that reaches a key name. Every request's token is checked so: one
// table lookup per byte and no branch on the (random) characters.
func B64URL(s string) bool {
	if s == "" {
		return false
	}
	var bad byte
	for i := 0; i < len(s); i++ {
		bad |= notB64URL[s[i]]
	}
	return bad == 0
}

// notB64URL is 1 for every byte outside the base64url alphabet.
var notB64URL = func() (t [256]byte) {
	for c := range t {
		t[c] = 1
	}
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") {
		t[c] = 0
	}
	return t
}()

// Record is a new session as the store writes it.
type Record struct {
	Ref Ref
	// VerifierMAC is the stored form of the token's verifier: a keyed MAC (GATEWAY_HMAC_KEY) of
	// the session id and the verifier, never the verifier or an unkeyed hash of it.
	VerifierMAC string
	UserID      string
	TenantID    string
	Status      string
	AuthLevel   string
	// LoginPending: the login waits for its MFA verify (Status must be MFA_REQUIRED).
	LoginPending bool
	// DeviceLabel is shown in device lists; IPHash and UserAgentHash are keyed hashes.
	DeviceLabel   string
	IPHash        string
	UserAgentHash string
	// Groups are the user's groups (ValidGroup each, at most MaxGroups).
	Groups   []string
	Idle     time.Duration
	Absolute time.Duration
}

// Session is a session's view: never its token or any hash of it.
type Session struct {
	Ref               Ref
	UserID            string
	TenantID          string
	Status            string
	AuthLevel         string
	DeviceLabel       string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	LastSeenAt        time.Time
	LastRotatedAt     time.Time
	MFAVerifiedAt     time.Time
	IdleExpiresAt     time.Time
	AbsoluteExpiresAt time.Time
	FailedMFAAttempts int64
	SchemaVersion     int
	// ChallengeLive is true while an MFA challenge can still be answered. Get and List know;
	// Authorize's view reads only the hash, so in the fallback mode (challenge in its own key)
	// it leaves this false.
	ChallengeLive bool
	// LoginPending is true for a session created with mfaRequired until its MFA is verified:
	// it is not logged in yet (forward auth, whoami and the device operations refuse it).
	// A step-up challenge on a logged-in session leaves it false.
	LoginPending bool
	// Groups are the session's groups (nil: none), as the access rules and X-Auth-Groups see them.
	Groups []string
}
