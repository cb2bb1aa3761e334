package auth

import "errors"

// ErrInvalidToken is wrapped by every token verification failure. Use errors.Is to test for it.
var ErrInvalidToken = errors.New("invalid token")

// TokenError is the concrete error returned by [Authority.Verify]. It wraps
// [ErrInvalidToken] and, when there is one, the underlying cause (for example
// jwt.ErrTokenExpired), so both can be matched with errors.Is.
//
// Its message and Reason never contain the token itself and are safe to
// return to clients.
type TokenError struct {
	// Reason is a short, client-safe explanation such as "token expired".
	Reason string
	cause  error
}

func (e *TokenError) Error() string { return ErrInvalidToken.Error() + ": " + e.Reason }

// Unwrap returns [ErrInvalidToken] and the underlying cause, if any.
func (e *TokenError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalidToken}
	}
	return []error{ErrInvalidToken, e.cause}
}

func invalid(reason string, cause error) error {
	return &TokenError{Reason: reason, cause: cause}
}
