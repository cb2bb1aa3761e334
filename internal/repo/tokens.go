package repo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Token metadata lives in one hash per token, keyed by the token id (its own hash tag):
//
//	<prefix>:v1:token:{<tokenId>}              HASH  the metadata below
//	<prefix>:v1:tokens:{<tenantTag>}:byexp     ZSET  tokenId scored by expiresAtMs (pruning)
//	<prefix>:v1:tokens:{<tenantTag>}:byid      ZSET  tokenId, score 0 (lexical = issue order)
//
// The two index keys share the tenant's tag (a keyed hash of the tenant id) so one script
// maintains both; the metadata hash has its own slot, so it is written after the index in a
// second step. See docs/KEYS.md "## Tokens".
const (
	tokenObj = "token"

	// MaxTokensPerTenant bounds a tenant's index: a tenant cannot hold more live tokens.
	MaxTokensPerTenant = 10000
	// Field bounds (bytes) for the metadata hash.
	maxTokenTenantBytes  = 128
	maxTokenSubjectBytes = 128
	maxTokenDescBytes    = 1024
	maxTokenReasonBytes  = 128
	maxTokenScopeBytes   = 256
	maxTokenTypeBytes    = 16
	// tokenFieldsMax is the most fields a token hash ever holds.
	tokenFieldsMax = 14
	// tokenPruneMax bounds how many expired index members one call removes.
	tokenPruneMax = 500
)

// Token is one API token's metadata. The token string itself is never stored.
type Token struct {
	ID          string
	Tenant      string
	Subject     string
	Type        string
	Scopes      []string
	Description string
	IssuedAt    time.Time
	ExpiresAt   time.Time
	Revoked     bool
	// RevokedAt and RevokedReason are set when Revoked.
	RevokedAt     time.Time
	RevokedReason string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// TokenState is what the per-request check reads: four fields and the schema version.
type TokenState struct {
	Tenant      string
	Scope       string // space-separated, as in the JWT's scope claim
	ExpiresAtMs int64
	Revoked     bool
	// CacheHit is true when the answer came from the client-side cache (no Redis round trip).
	CacheHit bool
}

// TokenRevokeResult says what a revocation did.
type TokenRevokeResult int

const (
	// TokenRevokeUnknown: no such token (nothing written).
	TokenRevokeUnknown TokenRevokeResult = iota
	// TokenRevoked: the token was live and is revoked now.
	TokenRevoked
	// TokenAlreadyRevoked: an earlier revocation stands (its time and reason are kept).
	TokenAlreadyRevoked
)

func (r TokenRevokeResult) String() string {
	switch r {
	case TokenRevoked:
		return "revoked"
	case TokenAlreadyRevoked:
		return "already_revoked"
	default:
		return "unknown"
	}
}

// Sentinel errors of the token repository.
var (
	// ErrTokensFull: the tenant already holds MaxTokensPerTenant live tokens.
	ErrTokensFull = errors.New("token index full")
	// ErrTokenExpired: the expiry is not in the future by the server's clock.
	ErrTokenExpired = errors.New("token expiry is not in the future")
	// ErrTokenExists: a hash already exists under this id (ids are random: never expected).
	ErrTokenExists = errors.New("token id already exists")
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
	// MaxPerTenant bounds a tenant's live tokens (default MaxTokensPerTenant).
	MaxPerTenant int
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Tokens is the token metadata repository.
type Tokens struct {
	c       rueidis.Client
	keys    Keys
	hasher  *keyhash.Hasher
	safety  time.Duration
	max     int
	metrics *Metrics
	log     *slog.Logger
}

var (
	scriptTokenIndexAdd = script("token_index_add")
	scriptTokenPut      = script("token_put")
	scriptTokenRevoke   = script("token_revoke")
	scriptTokenList     = script("token_list")
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
	case o.MaxPerTenant < 0:
		return nil, fmt.Errorf("%w: negative max per tenant", ErrTokensConfig)
	}
	if o.MaxPerTenant == 0 {
		o.MaxPerTenant = MaxTokensPerTenant
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tokens{c: s.Client, keys: Keys{Prefix: o.Prefix}, hasher: o.Hasher, safety: o.SafetyWindow,
		max: o.MaxPerTenant, metrics: o.Metrics, log: o.Logger}, nil
}

// ValidTokenID reports whether id has the shape auth.NewTokenID produces: 26 lower-case
// Crockford base32 characters. Only such ids ever reach a key name.
func ValidTokenID(id string) bool {
	if len(id) != 26 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z' && c != 'i' && c != 'l' && c != 'o' && c != 'u':
		default:
			return false
		}
	}
	return true
}

func (r *Tokens) hashKey(id string) string { return r.keys.Key("token", id) }

func (r *Tokens) indexKeys(tenant string) []string {
	tag := r.hasher.Tag("tenant", 9, tenant)
	return []string{r.keys.Key("tokens", tag, "byexp"), r.keys.Key("tokens", tag, "byid")}
}

// validate checks the bounds of a new token; over-bound input is refused before any write.
func (t Token) validate() error {
	var bad []string
	check := func(ok bool, name string) {
		if !ok {
			bad = append(bad, name)
		}
	}
	text := func(s string, maxBytes int, required bool) bool {
		return (!required || s != "") && len(s) <= maxBytes && utf8.ValidString(s) && !tokenHasControl(s)
	}
	check(ValidTokenID(t.ID), "id")
	check(text(t.Tenant, maxTokenTenantBytes, true), "tenant")
	check(text(t.Subject, maxTokenSubjectBytes, true), "subject")
	check(text(t.Type, maxTokenTypeBytes, true), "tokenType")
	check(text(t.Description, maxTokenDescBytes, false), "description")
	scope := strings.Join(t.Scopes, " ")
	check(len(t.Scopes) > 0 && len(scope) <= maxTokenScopeBytes && !strings.ContainsAny(scope, "\t\r\n"), "scopes")
	check(!t.ExpiresAt.IsZero() && t.ExpiresAt.After(t.IssuedAt), "expiresAt")
	if len(bad) > 0 {
		return apperr.Newf(apperr.BoundExceeded, "Token fields out of bounds: %s.", strings.Join(bad, ", "))
	}
	return nil
}

func tokenHasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// Create lists the token in its tenant's index and then writes its metadata hash with a key
// TTL of expiry − now + the safety window. The index goes first: if the second step fails the
// index holds an id without a hash, which readers skip and pruning removes at expiry; the
// reverse order could leave a live token that List never shows.
func (r *Tokens) Create(ctx context.Context, t Token) error {
	if err := t.validate(); err != nil {
		return err
	}
	expMs := t.ExpiresAt.UnixMilli()
	safety := ms(r.safety.Milliseconds())
	n, err := scriptTokenIndexAdd.Exec(ctx, r.c, r.indexKeys(t.Tenant),
		[]string{t.ID, ms(expMs), safety, strconv.Itoa(r.max), strconv.Itoa(tokenPruneMax)}).AsInt64()
	if err != nil {
		r.metrics.ScriptError(ctx, "token_index_add")
		return redisErr("token index add", err)
	}
	switch {
	case n == -1:
		return fmt.Errorf("token %s: %w", t.ID, ErrTokenExpired)
	case n == -2:
		r.metrics.Transition(ctx, tokenObj, "create", "index_full")
		return fmt.Errorf("tenant index: %w", ErrTokensFull)
	case n <= 0:
		r.metrics.ScriptError(ctx, "token_index_add")
		return fmt.Errorf("token index add: unexpected reply %d", n)
	}
	args := []string{ms(expMs), safety,
		"tenantId", t.Tenant, "subject", t.Subject, "tokenType", t.Type,
		"scopes", strings.Join(t.Scopes, " "), "description", t.Description,
		"issuedAtMs", ms(t.IssuedAt.UnixMilli()), "expiresAtMs", ms(expMs),
		"revoked", "0", "revokedAtMs", "0", "revokedReason", "",
		"schemaVersion", strconv.Itoa(SchemaVersion)}
	n, err = scriptTokenPut.Exec(ctx, r.c, []string{r.hashKey(t.ID)}, args).AsInt64()
	if err != nil {
		r.metrics.ScriptError(ctx, "token_put")
		return redisErr("token put", err)
	}
	switch {
	case n == -1:
		return fmt.Errorf("token %s: %w", t.ID, ErrTokenExpired)
	case n == -2:
		return fmt.Errorf("token %s: %w", t.ID, ErrTokenExists)
	case n <= 0:
		r.metrics.ScriptError(ctx, "token_put")
		return fmt.Errorf("token put: unexpected reply %d", n)
	}
	r.metrics.Transition(ctx, tokenObj, "create", "ok")
	return nil
}

// Get reads a token of tenant. A token of another tenant is NotFound, like an unknown one.
func (r *Tokens) Get(ctx context.Context, tenant, id string) (Token, error) {
	if !ValidTokenID(id) {
		return Token{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	m, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.hashKey(id)).Build()).AsStrMap()
	if err != nil {
		return Token{}, redisErr("token get", err)
	}
	t, err := r.decode(ctx, id, m)
	if err != nil {
		return Token{}, err
	}
	if t.Tenant != tenant {
		return Token{}, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	return t, nil
}

// decode classifies and decodes a token hash read with HGETALL.
func (r *Tokens) decode(ctx context.Context, id string, m map[string]string) (Token, error) {
	if len(m) == 0 {
		r.metrics.Read(ctx, tokenObj, Missing)
		return Token{}, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
	}
	r.metrics.Payload(ctx, tokenObj, size)
	f := newFields(m)
	t := Token{
		ID:            id,
		Tenant:        f.str("tenantId"),
		Subject:       f.str("subject"),
		Type:          f.str("tokenType"),
		Scopes:        strings.Fields(f.str("scopes")),
		Description:   f.opt("description"),
		IssuedAt:      time.UnixMilli(f.int64("issuedAtMs")),
		ExpiresAt:     time.UnixMilli(f.int64("expiresAtMs")),
		RevokedReason: f.opt("revokedReason"),
		CreatedAt:     time.UnixMilli(f.int64("createdAtMs")),
		UpdatedAt:     time.UnixMilli(f.int64("updatedAtMs")),
	}
	switch f.str("revoked") {
	case "1":
		t.Revoked = true
		t.RevokedAt = time.UnixMilli(f.optInt64("revokedAtMs"))
	case "0", "":
	default:
		f.bad = append(f.bad, "revoked")
	}
	o := f.schema()
	r.metrics.Read(ctx, tokenObj, o)
	if o == Corrupt {
		r.logCorrupt(ctx, f.bad)
		return Token{}, fmt.Errorf("token %s: %w", id, f.err(tokenObj))
	}
	return t, nil
}

func (r *Tokens) logCorrupt(ctx context.Context, bad []string) {
	r.log.WarnContext(ctx, "corrupt object", "object", tokenObj, "key_pattern", r.keys.Prefix+":v1:token:{<tokenId>}", "fields", bad)
}

// tokenStateFields are the only fields the per-request check reads (never HGETALL).
var tokenStateFields = []string{"revoked", "expiresAtMs", "tenantId", "scopes", "schemaVersion"}

// State reads what the per-request check needs with one HMGET. With cacheTTL > 0 it goes
// through rueidis client-side caching: a hot token costs no round trip, and a write to its
// hash (a revocation) invalidates every replica's copy through Redis's tracking push; cacheTTL
// caps staleness should a push be lost. A missing hash is NotFound; a malformed one ErrCorrupt.
func (r *Tokens) State(ctx context.Context, id string, cacheTTL time.Duration) (TokenState, error) {
	if !ValidTokenID(id) {
		return TokenState{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	cmd := r.c.B().Hmget().Key(r.hashKey(id)).Field(tokenStateFields...)
	var res rueidis.RedisResult
	if cacheTTL > 0 {
		res = r.c.DoCache(ctx, cmd.Cache(), cacheTTL)
	} else {
		res = r.c.Do(ctx, cmd.Build())
	}
	vals, err := res.ToArray()
	if err != nil {
		return TokenState{}, redisErr("token state", err)
	}
	st := TokenState{CacheHit: res.IsCacheHit()}
	if len(vals) != len(tokenStateFields) {
		return st, fmt.Errorf("token state: %d values for %d fields", len(vals), len(tokenStateFields))
	}
	var v [5]string
	present := 0
	for i := range vals {
		if s, err := vals[i].ToString(); err == nil {
			v[i] = s
			present++
		}
	}
	if present == 0 {
		r.metrics.Read(ctx, tokenObj, Missing)
		return st, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	var bad []string
	switch v[0] {
	case "1":
		st.Revoked = true
	case "0":
	default:
		bad = append(bad, "revoked")
	}
	if st.ExpiresAtMs, err = strconv.ParseInt(v[1], 10, 64); err != nil {
		bad = append(bad, "expiresAtMs")
	}
	if st.Tenant = v[2]; st.Tenant == "" {
		bad = append(bad, "tenantId")
	}
	if st.Scope = v[3]; st.Scope == "" {
		bad = append(bad, "scopes")
	}
	o := Found
	switch v[4] {
	case schemaCurrent:
	case schemaPrevious:
		o = OldSchema
	default:
		bad = append(bad, "schemaVersion")
	}
	if len(bad) > 0 {
		r.metrics.Read(ctx, tokenObj, Corrupt)
		r.logCorrupt(ctx, bad)
		return TokenState{}, fmt.Errorf("%w: token hash has missing or malformed fields %v", ErrCorrupt, bad)
	}
	r.metrics.Read(ctx, tokenObj, o)
	return st, nil
}

// Revoke marks a token of tenant revoked in one script. Unknown ids are a no-op
// (TokenRevokeUnknown); another tenant's token is NotFound and left untouched.
func (r *Tokens) Revoke(ctx context.Context, tenant, id, reason string) (TokenRevokeResult, error) {
	if !ValidTokenID(id) {
		return TokenRevokeUnknown, nil
	}
	if len(reason) > maxTokenReasonBytes || !utf8.ValidString(reason) || tokenHasControl(reason) {
		return TokenRevokeUnknown, apperr.New(apperr.Validation, "The revocation reason is too long or has control characters.")
	}
	n, err := scriptTokenRevoke.Exec(ctx, r.c, []string{r.hashKey(id)}, []string{tenant, reason}).AsInt64()
	if err != nil {
		r.metrics.ScriptError(ctx, "token_revoke")
		return TokenRevokeUnknown, redisErr("token revoke", err)
	}
	var res TokenRevokeResult
	switch n {
	case 0:
		res = TokenRevokeUnknown
	case 1:
		res = TokenRevoked
	case 2:
		res = TokenAlreadyRevoked
	case -1:
		r.metrics.Transition(ctx, tokenObj, "revoke", "other_tenant")
		return TokenRevokeUnknown, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	default:
		r.metrics.ScriptError(ctx, "token_revoke")
		return TokenRevokeUnknown, fmt.Errorf("token revoke: unexpected reply %d", n)
	}
	r.metrics.Transition(ctx, tokenObj, "revoke", res.String())
	return res, nil
}

// List returns up to limit of tenant's tokens, newest first, strictly older than cursor (a
// token id; "" for the first page), and the cursor of the next page ("" on the last page).
// Expired index members are pruned as the index is read. Ids whose hash is gone (expired, or
// a create that failed halfway) are skipped; the cursor still advances past them, so pages
// neither repeat nor skip a token.
func (r *Tokens) List(ctx context.Context, tenant, cursor string, limit int) ([]Token, string, error) {
	if cursor != "" && !ValidTokenID(cursor) {
		return nil, "", apperr.New(apperr.Validation, "The cursor is not one this gateway issued.")
	}
	if limit < 1 || limit > 1000 {
		return nil, "", apperr.New(apperr.Validation, "The limit is out of range.")
	}
	ids, err := scriptTokenList.Exec(ctx, r.c, r.indexKeys(tenant),
		[]string{cursor, strconv.Itoa(limit + 1), strconv.Itoa(tokenPruneMax)}).AsStrSlice()
	if err != nil {
		r.metrics.ScriptError(ctx, "token_list")
		return nil, "", redisErr("token list", err)
	}
	next := ""
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1]
	}
	if len(ids) == 0 {
		return nil, next, nil
	}
	cmds := make(rueidis.Commands, 0, len(ids))
	for _, id := range ids {
		if !ValidTokenID(id) {
			return nil, "", fmt.Errorf("%w: token index holds a malformed member", ErrCorrupt)
		}
		cmds = append(cmds, r.c.B().Hgetall().Key(r.hashKey(id)).Build())
	}
	out := make([]Token, 0, len(ids))
	for i, res := range r.c.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err != nil {
			return nil, "", redisErr("token list read", err)
		}
		if len(m) == 0 {
			r.metrics.Read(ctx, tokenObj, Missing)
			continue
		}
		t, err := r.decode(ctx, ids[i], m)
		if err != nil {
			// Corrupt entries are counted and logged by decode and never served.
			continue
		}
		if t.Tenant != tenant {
			continue
		}
		out = append(out, t)
	}
	return out, next, nil
}
