// Package auth issues and verifies the gateway's access tokens.
//
// Tokens are compact JWS (JWT) objects signed with Ed25519 ("EdDSA", RFC 8037).
// A [KeySet] holds the signing and verification keys, newest first: the first
// key signs, every key verifies, which allows key rotation without
// invalidating tokens that are still live. Each key is identified by its
// RFC 7638 JWK thumbprint, carried in the token's "kid" header; the public
// halves are published with [KeySet.JWKS].
//
// An [Authority] mints tokens ([Authority.Mint]) and verifies them
// ([Authority.Verify]); verification failures always wrap [ErrInvalidToken]
// and carry a short reason that is safe to show to clients. The verified
// identity travels through request handling as a [Principal] stored in the
// request context ([WithPrincipal], [PrincipalFrom]).
//
// HTTP framework integration (the Echo middleware) lives elsewhere; this
// package only provides the framework-neutral pieces ([BearerToken],
// [Checker]).
package auth
