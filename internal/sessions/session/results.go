package session

import (
	"errors"
	"time"
)

// ErrWrongVerifier is the store's answer to a token whose verifier is not the session's: the
// session exists, the token does not prove it. It is not a miss (nothing remembers it as one).
var ErrWrongVerifier = errors.New("session: the token's verifier is not the session's")

// What the session store takes and answers (internal/sessions' Store interface). They live in
// the model so that the store (internal/repo/sessionstore) and the service share them without
// either importing the other's package.

// AuthorizeOptions say what an authorization reads.
type AuthorizeOptions struct {
	// View reads the session's full view ("who am I"); without it only the hot fields forward
	// auth and every other operation need are read, and the answer is Partial.
	View bool
	// Fresh reads Redis, never the gateway's kept copy: for a session this gateway has just
	// changed, whose copy may predate the change (Redis's invalidation push trails the write's
	// reply).
	Fresh bool
	// VerifierMAC is the MAC of the presented token's verifier (Record.VerifierMAC's rule): a
	// session is authorized, or its idle window slid, only when it is the stored one.
	VerifierMAC string
}

// AuthContext is what authorization learns: the session's view (who, which tenant, which
// level, until when, and — for a view read — what "who am I" shows) and how it was read.
type AuthContext struct {
	Session
	// Partial is true when only the hot fields were read (a forward-auth read): Ref, UserID,
	// TenantID, AuthLevel, LoginPending, Groups and IdleExpiresAt are set, nothing else.
	Partial bool
	// Refreshed is true when this call slid the idle window.
	Refreshed bool
	// CacheHit is true when the session came from the gateway's copy (no round trip).
	CacheHit bool
	// Outcome classifies the read for metrics (found, old_schema, ...).
	Outcome string
	// Owner is the store's owner check's verdict on UserID and TenantID for Ref's tag.
	Owner OwnerVerdict
	// Derived is where the decoded copy this answer came from keeps a value derived from it
	// (nil when the store keeps none).
	Derived *Derived
}

// OwnerVerdict is what the store's owner check said of a session's stored owner.
type OwnerVerdict uint8

const (
	// OwnerUnchecked: the store has no owner check; the caller checks.
	OwnerUnchecked OwnerVerdict = iota
	OwnerMatches
	OwnerMismatch
)

// Created is a new session and the sessions its create evicted to stay within the cap.
type Created struct {
	Session
	Evicted []Ref
}

// MFAChallenge is an MFA challenge to store: only the HMAC of its code.
type MFAChallenge struct {
	Ref     Ref
	Tenant  string
	ID      string
	CodeMAC string
	TTL     time.Duration
}

// MFAVerification is one MFA verification attempt; on success the session's verifier is
// replaced by the one whose MAC is VerifierMAC (a new token, the same id).
type MFAVerification struct {
	Ref         Ref
	Tenant      string
	ChallengeID string
	CodeMAC     string
	VerifierMAC string
}

// VerifyOutcome is how an attempt ended.
type VerifyOutcome string

const (
	VerifyOK          VerifyOutcome = "verified"
	VerifyWrongCode   VerifyOutcome = "wrong_code"
	VerifyLimited     VerifyOutcome = "rate_limited"
	VerifyNoChallenge VerifyOutcome = "no_challenge"
)

// Attempts is the user's MFA attempt counter after one attempt (every attempt counts, whatever
// its outcome), under the store's attempt policy.
type Attempts struct {
	// Allowed is false when the attempt was over the limit (not compared).
	Allowed bool
	// Count is the attempts counted in the current window (refused ones excluded).
	Count int
	// Reset is the time until the window ends.
	Reset time.Duration
}

// VerifyResult is the outcome of a verification.
type VerifyResult struct {
	Outcome        VerifyOutcome
	Attempts       Attempts
	FailedAttempts int64
	// Session is set on success: the stepped-up session (same reference, new verifier).
	Session *Session
}
