package auth

import (
	"context"
	"net/http"
	"strings"
)

// BearerToken extracts the token from an "Authorization: Bearer <token>"
// header (RFC 6750 §2.1). The scheme is matched case-insensitively. It
// reports false when the header is absent, uses another scheme, is repeated,
// or does not hold exactly one token made of RFC 6750 b64token characters.
func BearerToken(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, rest, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token := strings.TrimSpace(rest)
	if !isB64Token(token) {
		return "", false
	}
	return token, true
}

// isB64Token reports whether s matches RFC 6750's
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
// This rejects empty values and anything containing whitespace or commas
// (i.e. multiple tokens).
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

// Checker is an optional hook that the verifier middleware calls after a
// token's signature and standard claims have been verified, e.g. to consult
// revocation metadata. A nil Checker means signature-only verification.
// Returning an error rejects the request.
type Checker interface {
	Check(ctx context.Context, c *Claims) error
}
