package auth

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Assertions: the short-lived identity JWT forward auth hands upstreams (X-Auth-Assertion),
// signed with the gateway's signing key and verifiable with its JWKS. Its audience is
// AssertionAudience, never the gateway's own, so an assertion is not an access token.
const (
	AssertionAudience = "hashgate-upstream"
	// AssertionTTL is an assertion's lifetime.
	AssertionTTL = 60 * time.Second
	// assertionRefresh: an assertion is handed out again until this much of its life is left.
	assertionRefresh = 20 * time.Second
	// DefaultAssertionCacheSize bounds the assertions kept for reuse in the shared cache (one
	// per credential): a forward-auth working set, such as the 41.5k distinct sessions of the
	// 1M-session Zipf benchmark, which the session memo answers without Redis. A credential
	// dropped here costs its next request a fresh Ed25519 signature (about 20 µs) unless the
	// session's kept copy still holds its assertion (AssertKept: at most one per memo entry,
	// which the memo's own bound limits); an entry is about 800 B, so this bound is about 50 MB.
	DefaultAssertionCacheSize = 65536
)

// Assertion is the identity an assertion states.
type Assertion struct {
	Kind      string // "session" or "token"
	Subject   string
	Tenant    string
	Level     string
	Groups    []string // a session's groups (nil: none)
	SessionID string   // sessions
	TokenID   string   // tokens
	Act       *Actor   // a minted token's actor chain
}

// AssertionClaims is an assertion's claim set: iss, aud (AssertionAudience), sub, iat, exp,
// jti, and tenant (the claim name of the gateway's tokens), kind, level, groups, sid or tid, act.
type AssertionClaims struct {
	jwt.RegisteredClaims
	Tenant    string   `json:"tenant"`
	Kind      string   `json:"kind"`
	Level     string   `json:"level"`
	Groups    []string `json:"groups,omitempty"`
	SessionID string   `json:"sid,omitempty"`
	TokenID   string   `json:"tid,omitempty"`
	Act       *Actor   `json:"act,omitempty"`
}

// Asserter signs assertions and keeps each for reuse until assertionRefresh before it
// expires, in a bounded cache keyed by the credential (session or token id), so the hot path
// signs once per credential per 40 s; AssertKept also keeps it with the session's decoded copy,
// where a request answered from that copy finds it without the cache's lookup. Safe for
// concurrent use.
type Asserter struct {
	a   *Authority
	max int
	mu  sync.RWMutex
	m   map[string]*assertionEntry
}

// assertionEntry is one signed assertion and what it states; never changed once kept.
type assertionEntry struct {
	in      Assertion
	actor   string // in.Act's subject, compared for reuse
	kid     string
	signed  string
	renewAt time.Time
}

// NewAsserter returns an Asserter signing with a's key, keeping at most size assertions
// (0: DefaultAssertionCacheSize).
func NewAsserter(a *Authority, size int) *Asserter {
	if size <= 0 {
		size = DefaultAssertionCacheSize
	}
	return &Asserter{a: a, max: size, m: make(map[string]*assertionEntry)}
}

// Assert returns a signed assertion of in: a kept one while it states the same identity, is
// signed by the current key and has more than assertionRefresh left; a new one otherwise.
func (as *Asserter) Assert(in Assertion) (string, error) { return as.AssertKept(in, nil) }

// AssertKept is Assert for a credential answered from a decoded copy that keeps d (a session
// from the memo: Principal.Derived): the assertion kept there is handed out under Assert's
// rules without a lookup in the shared cache, and the one handed out is kept there. A nil d is
// Assert.
func (as *Asserter) AssertKept(in Assertion, d *session.Derived) (string, error) {
	now := as.a.now()
	kid := as.a.keys.SigningKID()
	if e, ok := d.Load().(*assertionEntry); ok && e.states(in, kid, now) {
		return e.signed, nil
	}
	key := in.SessionID
	if in.Kind != "session" {
		key = in.TokenID
	}
	as.mu.RLock()
	e, ok := as.m[key]
	as.mu.RUnlock()
	if !ok || !e.states(in, kid, now) {
		signed, err := as.sign(in, now)
		if err != nil {
			return "", err
		}
		e = &assertionEntry{in: in, actor: actorSubject(in.Act), kid: kid, signed: signed, renewAt: now.Add(AssertionTTL - assertionRefresh)}
		as.mu.Lock()
		if len(as.m) >= as.max {
			for k := range as.m { // full: a quarter goes, in the map's random order
				delete(as.m, k)
				if len(as.m) < as.max*3/4 {
					break
				}
			}
		}
		as.m[key] = e
		as.mu.Unlock()
	}
	d.Store(e)
	return e.signed, nil
}

// states reports whether e may be handed out for in at now: the same identity, signed by the
// current key (kid), with more than assertionRefresh left.
func (e *assertionEntry) states(in Assertion, kid string, now time.Time) bool {
	return now.Before(e.renewAt) && e.kid == kid && e.in.Kind == in.Kind && e.in.Subject == in.Subject &&
		e.in.Tenant == in.Tenant && e.in.Level == in.Level && e.in.SessionID == in.SessionID &&
		e.in.TokenID == in.TokenID && e.actor == actorSubject(in.Act) && slices.Equal(e.in.Groups, in.Groups)
}

func (as *Asserter) sign(in Assertion, now time.Time) (string, error) {
	key, ok := as.a.keys.signer()
	if !ok {
		return "", errors.New("auth: assertion: no signing key")
	}
	now = now.Truncate(jwt.TimePrecision)
	claims := AssertionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    as.a.issuer,
			Subject:   in.Subject,
			Audience:  jwt.ClaimStrings{AssertionAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(AssertionTTL)),
			ID:        NewTokenID(now),
		},
		Tenant: in.Tenant, Kind: in.Kind, Level: in.Level, Groups: in.Groups, SessionID: in.SessionID, TokenID: in.TokenID, Act: in.Act,
	}
	signed, err := signAssertion(key.Private, key.ID, &claims)
	if err != nil {
		return "", fmt.Errorf("auth: assertion: sign: %w", err)
	}
	return signed, nil
}

func actorSubject(a *Actor) string {
	if a == nil {
		return ""
	}
	return a.Subject
}
