package tokens

// The API-token model the service and its Redis store (internal/repo/tokenstore) share: a
// token's metadata, the shape of its id, and what a revocation did. The token string itself is
// never part of it.

import "time"

// Token is one API token's metadata. The token string itself is never stored.
type Token struct {
	ID          string
	Tenant      string
	Subject     string
	Type        string
	Scopes      []string
	Description string
	IssuedAt    time.Time
	ExpiresAt   time.Time
	Revoked     bool
	// ParentID is the token whose credentials minted this one ("" for a root, minted by the
	// bootstrap/CLI path); RootID is the lineage's root ("" for a root); Depth is 0 for a root.
	ParentID string
	RootID   string
	Depth    int
	// Ancestors are the ids from the root down to ParentID (Depth of them; none for a root).
	Ancestors []string
	// RevokedAt and RevokedReason are set when Revoked.
	RevokedAt     time.Time
	RevokedReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Below reports whether t is id itself or was minted below it (id is one of its ancestors).
func (t Token) Below(id string) bool {
	if id == "" {
		return false
	}
	for _, a := range t.Ancestors {
		if a == id {
			return true
		}
	}
	return t.ID == id
}

// RevokeResult says what a revocation did.
type RevokeResult int

const (
	// RevokeUnknown: no such token (nothing written).
	RevokeUnknown RevokeResult = iota
	// Revoked: the token was live and is revoked now.
	Revoked
	// AlreadyRevoked: an earlier revocation stands (its time and reason are kept).
	AlreadyRevoked
)

func (r RevokeResult) String() string {
	switch r {
	case Revoked:
		return "revoked"
	case AlreadyRevoked:
		return "already_revoked"
	default:
		return "unknown"
	}
}

// ValidID reports whether id has the shape auth.NewTokenID produces: 26 lower-case Crockford
// base32 characters. Only such ids ever reach a key name.
func ValidID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z' && c != 'i' && c != 'l' && c != 'o' && c != 'u':
		default:
			return false
		}
	}
	return true
}

// HasControl reports whether s holds a control character, which no stored token field may
// (the service refuses it; the store refuses it again before writing).
func HasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
