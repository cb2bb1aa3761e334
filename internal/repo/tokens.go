package repo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Token metadata lives in one hash per token; every key of a tenant's tokens shares the
// tenant's tag (a keyed hash of the tenant id), so a create and a cascading revocation are
// each one script, unchanged on Redis Cluster:
//
//	<prefix>:v1:token:{<tenantTag>}:<tokenId>        HASH  the metadata below
//	<prefix>:v1:tokens:{<tenantTag>}:byexp           ZSET  tokenId scored by expiresAtMs (pruning)
//	<prefix>:v1:tokens:{<tenantTag>}:byid            ZSET  tokenId, score 0 (lexical = issue order)
//	<prefix>:v1:tokens:{<tenantTag>}:kids:<tokenId>  SET   ids of the tokens this token minted
//
// A token minted with another token's credentials (its issuer) records parentId, rootId (the
// first token of the lineage, minted by the bootstrap/CLI path), depth and ancestors (root
// first, so "is X above this token" is one read); the root counts
// every token minted under it (lineageCount). A lineage is bounded (MaxTokenLineage tokens,
// MaxTokenDepth generations), which bounds the work of one revocation. See docs/KEYS.md
// "## Tokens".
const (
	tokenObj = "token"

	// MaxTokensPerTenant bounds a tenant's index, the most GATEWAY_TENANT_MAX_TOKENS may be: a
	// create over the tenant's quota is refused with 429 quota-exceeded.
	MaxTokensPerTenant = 10000
	// Field bounds (bytes) for the metadata hash.
	maxTokenTenantBytes  = 128
	maxTokenSubjectBytes = 128
	maxTokenDescBytes    = 1024
	maxTokenReasonBytes  = 128
	maxTokenScopeBytes   = 640
	maxTokenTypeBytes    = 16
	// tokenFieldsMax is the most fields a token hash ever holds (13, plus parentId, rootId,
	// depth and ancestors on a minted token, or lineageCount on a root).
	tokenFieldsMax = 17
	// MaxTokenLineage bounds the tokens minted under one root token, all generations together,
	// over the root's life (revoked and expired ones count): a revocation revokes at most this
	// many descendants in its one script.
	MaxTokenLineage = 1000
	// MaxTokenDepth bounds the generations below a root (a root's children are depth 1): a
	// revocation reads the children sets in at most this many round trips.
	MaxTokenDepth = 8
	// maxRevokeRetries bounds the revocation's re-reads when tokens are minted under it meanwhile.
	maxRevokeRetries = 5
	// tokenPruneMax bounds how many expired index members one call removes.
	tokenPruneMax = 500
)

// TokenState is what the per-request check reads: four fields and the schema version.
type TokenState struct {
	Tenant      string
	Scope       string // space-separated, as in the JWT's scope claim
	ExpiresAtMs int64
	Revoked     bool
	// CacheHit is true when the answer came from the client-side cache (no Redis round trip).
	CacheHit bool
}

// Sentinel errors of the token repository.
var (
	// ErrTokenExpired: the expiry is not in the future by the server's clock.
	ErrTokenExpired = errors.New("token expiry is not in the future")
	// ErrTokenExists: a hash already exists under this id (ids are random: never expected).
	ErrTokenExists = errors.New("token id already exists")
	// ErrTokenIssuerGone: the issuing token is not live (revoked, expired or unknown).
	ErrTokenIssuerGone = errors.New("issuing token is not live")
	// ErrTokenOutlivesIssuer: the token would expire after its issuer.
	ErrTokenOutlivesIssuer = errors.New("token would outlive its issuer")
	// ErrTokenLineageFull: MaxTokenLineage tokens were minted under the root already, or the
	// new token would be deeper than MaxTokenDepth.
	ErrTokenLineageFull = errors.New("token lineage full")
	// ErrTokensConfig reports a bad NewTokens option.
	ErrTokensConfig = errors.New("repo: bad tokens configuration")
)

// TokensOptions configure NewTokens.
type TokensOptions struct {
	// Prefix is the key prefix (config KeyPrefix).
	Prefix string
	// Hasher derives tenant tags; required.
	Hasher *keyhash.Hasher
	// SafetyWindow is added to a token's remaining life for its key TTL (config TokenSafetyWindow).
	SafetyWindow time.Duration
	// MaxPerTenant is the tenant's token quota, live tokens (GATEWAY_TENANT_MAX_TOKENS; default
	// and at most MaxTokensPerTenant).
	MaxPerTenant int
	// MaxLineage bounds the tokens minted under one root (default MaxTokenLineage).
	MaxLineage int
	Metrics    *Metrics
	Logger     *slog.Logger
}

// Tokens is the token metadata repository.
type Tokens struct {
	c rueidis.Client
	// dur confirms revocations (durable.go).
	dur        *store.Durable
	keys       Keys
	hasher     *keyhash.Hasher
	safety     time.Duration
	max        int
	maxLineage int
	metrics    *Metrics
	log        *slog.Logger
}

var (
	scriptTokenCreate = script("token_create")
	scriptTokenRevoke = script("token_revoke")
	scriptTokenList   = script("token_list")
)

// NewTokens returns the repository over s.
func NewTokens(s *store.Store, o TokensOptions) (*Tokens, error) {
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: no store", ErrTokensConfig)
	case o.Hasher == nil:
		return nil, fmt.Errorf("%w: no hasher", ErrTokensConfig)
	case o.Prefix == "" || strings.ContainsAny(o.Prefix, ":{} "):
		return nil, fmt.Errorf("%w: bad key prefix", ErrTokensConfig)
	case o.SafetyWindow < 0:
		return nil, fmt.Errorf("%w: negative safety window", ErrTokensConfig)
	case o.MaxPerTenant < 0 || o.MaxPerTenant > MaxTokensPerTenant:
		return nil, fmt.Errorf("%w: max per tenant not within 0..%d", ErrTokensConfig, MaxTokensPerTenant)
	}
	if o.MaxPerTenant == 0 {
		o.MaxPerTenant = MaxTokensPerTenant
	}
	if o.MaxLineage <= 0 || o.MaxLineage > MaxTokenLineage {
		o.MaxLineage = MaxTokenLineage
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tokens{c: s.Client, dur: s.Durable, keys: Keys{Prefix: o.Prefix}, hasher: o.Hasher, safety: o.SafetyWindow,
		max: o.MaxPerTenant, maxLineage: o.MaxLineage, metrics: o.Metrics, log: o.Logger}, nil
}

// tag is the tenant's hash tag (keyhash's TenantTag, memoized there).
func (r *Tokens) tag(tenant string) string { return r.hasher.TenantTag(tenant) }

func (r *Tokens) hashKey(tag, id string) string { return r.keys.Key("token", tag, id) }

func (r *Tokens) kidsKey(tag, id string) string { return r.keys.Key("tokens", tag, "kids", id) }

func (r *Tokens) indexKeys(tag string) []string {
	return []string{r.keys.Key("tokens", tag, "byexp"), r.keys.Key("tokens", tag, "byid")}
}

// run executes a token script and decodes its reply (reply.go); a failure is counted as a
// script error and classified (connectivity → store.ErrUnavailable). NOT_FOUND and EXISTS
// carry no payload in any token script.
func (r *Tokens) run(ctx context.Context, name string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	return r.runOn(ctx, r.c, name, l, keys, args)
}

// runOn is run on c (the pinned connection of a durable write).
func (r *Tokens) runOn(ctx context.Context, c rueidis.Client, name string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	rep, err := CallScript(ctx, c, name, l, keys, args)
	if err != nil {
		r.metrics.ScriptError(ctx, name)
		return Reply{}, CommandError(strings.ReplaceAll(name, "_", " "), err)
	}
	if err := rep.Bare(CodeNotFound, CodeExists); err != nil {
		return Reply{}, r.badReply(ctx, name, err)
	}
	return rep, nil
}

// badReply counts a reply of the wrong shape (err wraps ErrReply) as a script error.
func (r *Tokens) badReply(ctx context.Context, name string, err error) error {
	r.metrics.ScriptError(ctx, name)
	return err
}

func (r *Tokens) logCorrupt(ctx context.Context, bad []string) {
	r.log.WarnContext(ctx, "corrupt object", "object", tokenObj, "key_pattern", r.keys.Prefix+":v1:token:{<tenantTag>}:<tokenId>", "fields", bad)
}
