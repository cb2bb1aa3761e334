package auth

import (
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestVerifyRefusesCritAndNonNumericDates: a token signed with the gateway's own key is
// refused when its header names a critical extension (RFC 7515 §4.1.11: the gateway
// implements none) or when exp, nbf or iat is not a JSON number (RFC 7519 NumericDate; the
// JWT library would read the string "1999999999" as a date). Each token is verified twice,
// so the verified-token cache cannot turn a refusal into a pass, and the same claims with
// numeric dates and no crit are accepted (each case fails for its stated reason only).
func TestVerifyRefusesCritAndNonNumericDates(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, seedB64(1))
	signer, _ := ks.signer()
	now := t0
	a := newAuthority(t, ks, &now)
	b64 := base64.RawURLEncoding.EncodeToString
	// signRaw signs a hand-built header and payload (JSON text as given).
	signRaw := func(header, payload string) string {
		in := b64([]byte(header)) + "." + b64([]byte(payload))
		sig, err := jwt.SigningMethodEdDSA.Sign(in, signer.Private)
		if err != nil {
			t.Fatal(err)
		}
		return in + "." + b64(sig)
	}
	hdr := `{"alg":"EdDSA","typ":"JWT","kid":"` + signer.ID + `"}`
	n := func(d time.Duration) string { return jwtNum(t0.Add(d)) }
	body := func(iat, nbf, exp string) string {
		return `{"iss":"` + testIssuer + `","sub":"u","aud":["` + testAudience + `"],"jti":"j1","tenant":"acme","scope":"cases:read","iat":` +
			iat + `,"nbf":` + nbf + `,"exp":` + exp + `}`
	}
	good := body(n(0), n(0), n(time.Hour))
	if _, err := a.Verify(signRaw(hdr, good)); err != nil {
		t.Fatalf("hand-built valid token refused: %v", err)
	}
	q := func(s string) string { return `"` + s + `"` }
	tests := []struct {
		name, token, reason string
	}{
		{"crit with an unknown extension", signRaw(`{"alg":"EdDSA","typ":"JWT","kid":"`+signer.ID+`","crit":["exp"],"exp":1}`, good), "unsupported critical header"},
		{"crit naming a private parameter", signRaw(`{"alg":"EdDSA","kid":"`+signer.ID+`","crit":["x-ext"],"x-ext":true}`, good), "unsupported critical header"},
		{"crit empty list", signRaw(`{"alg":"EdDSA","kid":"`+signer.ID+`","crit":[]}`, good), "unsupported critical header"},
		{"crit not a list", signRaw(`{"alg":"EdDSA","kid":"`+signer.ID+`","crit":"b64"}`, good), "unsupported critical header"},
		{"exp as a string", signRaw(hdr, body(n(0), n(0), q("1999999999"))), "non-numeric date"},
		{"nbf as a string", signRaw(hdr, body(n(0), q(n(0)), n(time.Hour))), "non-numeric date"},
		{"iat as a string", signRaw(hdr, body(q(n(0)), n(0), n(time.Hour))), "non-numeric date"},
		{"exp as a boolean", signRaw(hdr, body(n(0), n(0), "true")), "malformed token"},
		{"exp null", signRaw(hdr, body(n(0), n(0), "null")), "missing required claim"},
		{"nbf null", signRaw(hdr, body(n(0), "null", n(time.Hour))), "non-numeric date"},
		{"iat as an object", signRaw(hdr, body(`{"n":1}`, n(0), n(time.Hour))), "malformed token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for i := range 2 { // the second call would be served by the verified-token cache
				c, err := a.Verify(tt.token)
				if c != nil {
					t.Fatalf("call %d: accepted: %+v", i, c)
				}
				checkVerifyErr(t, tt.token, err, tt.reason)
			}
		})
	}
}

func jwtNum(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
