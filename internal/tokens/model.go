package tokens

import "github.com/hashgate/hashgate/internal/repo"

// Token is a token's metadata as the service answers it. It is still the repository's type
// (an alias), until the token model moves into this package.
type Token = repo.Token

// RevokeResult is what a revocation did (an alias of the repository's type, as Token).
type RevokeResult = repo.TokenRevokeResult
