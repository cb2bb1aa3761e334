package auth

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The assertion's JWS written directly: the bytes golang-jwt's SignedString makes of
// AssertionClaims (json.Marshal of the header map and of the claims, base64url without
// padding, Ed25519 over the two segments), without the reflection and the intermediate copies.
// The hot path signs each session's first sighting, so this is part of a miss's cost
// (TestAssertionEncodingMatchesJSON holds the bytes to json.Marshal's).

// signAssertion returns the compact JWS of c, signed with priv under kid.
func signAssertion(priv ed25519.PrivateKey, kid string, c *AssertionClaims) (string, error) {
	var hdr, claims [512]byte
	h := append(appendJSONString(append(hdr[:0], `{"alg":"EdDSA","kid":`...), kid), `,"typ":"JWT"}`...)
	body, err := appendAssertionClaims(claims[:0], c)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	b := make([]byte, 0, enc.EncodedLen(len(h))+enc.EncodedLen(len(body))+enc.EncodedLen(ed25519.SignatureSize)+2)
	b = append(enc.AppendEncode(b, h), '.')
	b = enc.AppendEncode(b, body)
	sig := ed25519.Sign(priv, b)
	b = enc.AppendEncode(append(b, '.'), sig)
	return string(b), nil
}

// appendAssertionClaims appends json.Marshal(c): the same members, order and omissions.
func appendAssertionClaims(b []byte, c *AssertionClaims) ([]byte, error) {
	start := len(b)
	b = append(b, '{')
	sep := func() {
		if len(b) > start+1 {
			b = append(b, ',')
		}
	}
	str := func(name, v string, omitEmpty bool) {
		if v == "" && omitEmpty {
			return
		}
		sep()
		b = appendJSONString(append(append(append(b, '"'), name...), `":`...), v)
	}
	strs := func(name string, vs []string) {
		sep()
		b = append(append(append(b, '"'), name...), `":[`...)
		for i, v := range vs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, v)
		}
		b = append(b, ']')
	}
	str("iss", c.Issuer, true)
	str("sub", c.Subject, true)
	if len(c.Audience) > 0 {
		strs("aud", c.Audience)
	}
	date := func(name string, d *jwt.NumericDate) error {
		if d == nil {
			return nil
		}
		sep()
		b = append(append(append(b, '"'), name...), `":`...)
		if jwt.TimePrecision != time.Second || d.Nanosecond() != 0 {
			v, err := d.MarshalJSON()
			b = append(b, v...)
			return err
		}
		b = strconv.AppendInt(b, d.Unix(), 10)
		return nil
	}
	if err := errors.Join(date("exp", c.ExpiresAt), date("nbf", c.NotBefore), date("iat", c.IssuedAt)); err != nil {
		return nil, err
	}
	str("jti", c.ID, true)
	str("tenant", c.Tenant, false)
	str("kind", c.Kind, false)
	str("level", c.Level, false)
	if len(c.Groups) > 0 {
		strs("groups", c.Groups)
	}
	str("sid", c.SessionID, true)
	str("tid", c.TokenID, true)
	if c.Act != nil { // a minted token's actor chain: rare, encoded by encoding/json
		act, err := json.Marshal(c.Act)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"act":`...), act...)
	}
	return append(b, '}'), nil
}

// appendJSONString appends v as encoding/json encodes a string: as is between quotes when it is
// printable ASCII with nothing to escape (ids, tags, levels always are), else by json.Marshal.
func appendJSONString(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(v) // a string always encodes
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), v...), '"')
}
