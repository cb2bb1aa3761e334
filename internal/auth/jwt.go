package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults for [Options].
const (
	DefaultLeeway        = 30 * time.Second
	DefaultMaxTokenBytes = 4096
)

// Options configures an [Authority].
type Options struct {
	// Issuer is the "iss" value minted and required. Required.
	Issuer string
	// Audience is the "aud" value minted and required. Required.
	Audience string
	// Keys must be able to sign (its first key has private material).
	Keys *KeySet
	// Leeway is the clock-skew allowance for exp, nbf and iat.
	// Zero means DefaultLeeway; negative values are rejected.
	Leeway time.Duration
	// MaxTokenBytes bounds the size of tokens Verify will parse and Mint will
	// produce. Zero means DefaultMaxTokenBytes; negative values are rejected.
	MaxTokenBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// VerifyCacheSize bounds the cache of verified tokens (keyed by their SHA-256) that spares
	// a hot token the Ed25519 check. Zero means DefaultVerifyCacheSize; negative disables it.
	VerifyCacheSize int
}

// Authority mints and verifies the gateway's access tokens. It is safe for
// concurrent use.
type Authority struct {
	issuer   string
	audience string
	keys     *KeySet
	maxBytes int
	now      func() time.Time
	parser   *jwt.Parser
	leeway   time.Duration
	verified *verifyCache
}

// New validates opts and returns an Authority.
func New(opts Options) (*Authority, error) {
	switch {
	case opts.Issuer == "":
		return nil, errors.New("auth: issuer is required")
	case opts.Audience == "":
		return nil, errors.New("auth: audience is required")
	case opts.Keys == nil:
		return nil, errors.New("auth: keys are required")
	case !opts.Keys.CanSign():
		return nil, errors.New("auth: the first (newest) key must be a signing key")
	case opts.Leeway < 0:
		return nil, errors.New("auth: leeway must not be negative")
	case opts.MaxTokenBytes < 0:
		return nil, errors.New("auth: max token bytes must not be negative")
	}
	if opts.Leeway == 0 {
		opts.Leeway = DefaultLeeway
	}
	if opts.MaxTokenBytes == 0 {
		opts.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Authority{
		issuer:   opts.Issuer,
		audience: opts.Audience,
		keys:     opts.Keys,
		maxBytes: opts.MaxTokenBytes,
		now:      opts.Now,
		leeway:   opts.Leeway,
	}
	switch {
	case opts.VerifyCacheSize == 0:
		a.verified = newVerifyCache(DefaultVerifyCacheSize)
	case opts.VerifyCacheSize > 0:
		a.verified = newVerifyCache(opts.VerifyCacheSize)
	}
	a.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(opts.Issuer),
		jwt.WithAudience(opts.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(opts.Leeway),
		jwt.WithTimeFunc(opts.Now),
		// Reject non-canonical base64 so a token has exactly one encoding.
		jwt.WithStrictDecoding(),
	)
	return a, nil
}

// Issuer returns the configured issuer.
func (a *Authority) Issuer() string { return a.issuer }

// Audience returns the configured audience.
func (a *Authority) Audience() string { return a.audience }

// Keys returns the key set (e.g. to serve its JWKS).
func (a *Authority) Keys() *KeySet { return a.keys }

// MintInput describes a token to mint.
type MintInput struct {
	Subject string
	Tenant  string
	// Scopes must all be known (see ValidScope); duplicates are dropped.
	Scopes []string
	// TTL must be positive.
	TTL time.Duration
	// NotAfter, when set, caps exp (a token minted by another token never outlives it); it
	// must leave at least a second.
	NotAfter time.Time
	// TokenID is the "jti"; empty means NewTokenID(now).
	TokenID string
	// TokenType is the optional "token_type" claim.
	TokenType string
	// Act is the optional RFC 8693 "act" claim (who minted the token); at most MaxActorDepth
	// actors, each with a subject.
	Act *Actor
}

// Mint signs a new token with the newest key and returns it together with
// its claims. iat and nbf are the current time, exp is iat+TTL capped at NotAfter (all with
// one-second precision).
func (a *Authority) Mint(in MintInput) (string, Claims, error) {
	switch {
	case in.Subject == "":
		return "", Claims{}, errors.New("auth: mint: subject is required")
	case in.Tenant == "":
		return "", Claims{}, errors.New("auth: mint: tenant is required")
	case in.TTL <= 0:
		return "", Claims{}, errors.New("auth: mint: ttl must be positive")
	case !validActor(in.Act):
		return "", Claims{}, errors.New("auth: mint: an actor chain needs a subject at every level and at most 8 levels")
	}
	scopes := make([]string, 0, len(in.Scopes))
	for _, s := range in.Scopes {
		if !ValidScope(s) {
			return "", Claims{}, fmt.Errorf("auth: mint: unknown scope %q", s)
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	key, ok := a.keys.signer()
	if !ok { // unreachable: checked by New
		return "", Claims{}, errors.New("auth: mint: no signing key")
	}

	now := a.now().Truncate(jwt.TimePrecision)
	exp := now.Add(in.TTL)
	if !in.NotAfter.IsZero() {
		if na := in.NotAfter.Truncate(jwt.TimePrecision); na.Before(exp) {
			exp = na
		}
		if !exp.After(now) {
			return "", Claims{}, ErrNotAfterPassed
		}
	}
	jti := in.TokenID
	if jti == "" {
		jti = NewTokenID(now)
	}
	claims := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    a.issuer,
			Subject:   in.Subject,
			Audience:  jwt.ClaimStrings{a.audience},
			ExpiresAt: jwt.NewNumericDate(exp),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        jti,
		},
		Tenant:    in.Tenant,
		Scope:     strings.Join(scopes, " "),
		TokenType: in.TokenType,
		Act:       in.Act,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = key.ID
	signed, err := tok.SignedString(key.Private)
	if err != nil {
		return "", Claims{}, fmt.Errorf("auth: mint: sign: %w", err)
	}
	if len(signed) > a.maxBytes {
		return "", Claims{}, fmt.Errorf("auth: mint: token is %d bytes, over the %d-byte limit", len(signed), a.maxBytes)
	}
	return signed, claims, nil
}

// validActor reports whether an actor chain is absent or has a subject at every one of at most
// MaxActorDepth levels.
func validActor(a *Actor) bool {
	if a.depth() > MaxActorDepth {
		return false
	}
	for ; a != nil; a = a.Act {
		if a.Subject == "" {
			return false
		}
	}
	return true
}

// ErrNotAfterPassed: Mint's NotAfter leaves no whole second of life.
var ErrNotAfterPassed = errors.New("auth: mint: the token's latest expiry has passed")

// Key lookup failures, distinguished in Verify's reasons.
var (
	errMissingKID = errors.New("missing kid")
	errUnknownKID = errors.New("unknown kid")
	errBadTyp     = errors.New("unexpected typ")
	errCrit       = errors.New("unsupported critical header")
)

// Verify checks a token's size (before any parsing), signature (EdDSA only, key chosen by the
// "kid" header), iss, aud, exp (required), nbf, iat (with leeway) and the
// presence of sub, jti and tenant. Every failure is a *[TokenError] wrapping
// [ErrInvalidToken].
func (a *Authority) Verify(token string) (*Claims, error) {
	if token == "" {
		return nil, invalid("empty token", nil)
	}
	if len(token) > a.maxBytes {
		return nil, invalid("token too large", nil)
	}
	if c, ok := a.verified.get(token, a.now(), a.leeway); ok {
		return c, nil
	}
	claims := new(Claims)
	if _, err := a.parser.ParseWithClaims(token, claims, a.keyFunc); err != nil {
		return nil, invalid(reason(err), err)
	}
	if !numericDates(token) {
		return nil, invalid("non-numeric date", nil)
	}
	switch {
	case claims.Subject == "":
		return nil, invalid("missing sub", nil)
	case claims.ID == "":
		return nil, invalid("missing jti", nil)
	case claims.Tenant == "":
		return nil, invalid("missing tenant", nil)
	case !validActor(claims.Act):
		return nil, invalid("malformed act", nil)
	}
	a.verified.put(token, claims, a.now())
	return claims, nil
}

func (a *Authority) keyFunc(t *jwt.Token) (any, error) {
	// RFC 7515 §4.1.11: a recipient must refuse a token whose "crit" names an extension it does
	// not implement. The gateway implements none, so any "crit" (even a malformed or empty one,
	// which the RFC forbids) is refused before a key is looked up.
	if _, present := t.Header["crit"]; present {
		return nil, errCrit
	}
	if typ, present := t.Header["typ"]; present {
		if s, ok := typ.(string); !ok || !strings.EqualFold(s, "JWT") {
			return nil, errBadTyp
		}
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errMissingKID
	}
	pub, ok := a.keys.PublicKey(kid)
	if !ok {
		return nil, errUnknownKID
	}
	return pub, nil
}

// reasons are the short client-safe reasons of parse errors, the first that matches winning.
// Order matters: key lookup errors are wrapped in ErrTokenUnverifiable, and claim errors in
// ErrTokenInvalidClaims.
var reasons = []struct {
	err    error
	reason string
}{
	{errMissingKID, "missing kid"},
	{errUnknownKID, "unknown kid"},
	{errBadTyp, "unexpected typ"},
	{errCrit, "unsupported critical header"},
	{jwt.ErrTokenMalformed, "malformed token"},
	{jwt.ErrTokenSignatureInvalid, "invalid signature or algorithm"},
	{jwt.ErrTokenExpired, "token expired"},
	{jwt.ErrTokenNotValidYet, "token not valid yet"},
	{jwt.ErrTokenUsedBeforeIssued, "token issued in the future"},
	{jwt.ErrTokenInvalidIssuer, "wrong issuer"},
	{jwt.ErrTokenInvalidAudience, "wrong audience"},
	{jwt.ErrTokenRequiredClaimMissing, "missing required claim"},
	{jwt.ErrTokenUnverifiable, "token unverifiable"},
}

// reason maps a parse error to its reason (reasons), "invalid claims" for any other.
func reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "invalid claims"
}

// dateFields are a token's NumericDate claims, decoded as the JWT library decodes them (the
// same encoding/json key matching), but kept raw.
type dateFields struct {
	Exp json.RawMessage `json:"exp"`
	Nbf json.RawMessage `json:"nbf"`
	Iat json.RawMessage `json:"iat"`
}

// numericDates reports whether exp, nbf and iat, where present, are JSON numbers (RFC 7519
// §2 NumericDate). The JWT library reads a quoted "1999999999" as a date; this refuses it,
// and null. It runs after the signature verified, so the payload segment is well formed.
func numericDates(token string) bool {
	first := strings.IndexByte(token, '.')
	last := strings.LastIndexByte(token, '.')
	if first < 0 || last <= first {
		return false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token[first+1 : last])
	if err != nil {
		return false
	}
	var d dateFields
	if err := json.Unmarshal(raw, &d); err != nil {
		return false
	}
	for _, v := range []json.RawMessage{d.Exp, d.Nbf, d.Iat} {
		if v == nil {
			continue
		}
		if c := v[0]; c != '-' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
