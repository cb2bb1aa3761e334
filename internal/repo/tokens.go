package repo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
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
// first token of the lineage, minted by the bootstrap/CLI path) and depth; the root counts
// every token minted under it (lineageCount). A lineage is bounded (MaxTokenLineage tokens,
// MaxTokenDepth generations), which bounds the work of one revocation. See docs/KEYS.md
// "## Tokens".
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
	// tokenFieldsMax is the most fields a token hash ever holds (13, plus parentId, rootId and
	// depth on a minted token, or lineageCount on a root).
	tokenFieldsMax = 16
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
	// ParentID is the token whose credentials minted this one ("" for a root, minted by the
	// bootstrap/CLI path); RootID is the lineage's root ("" for a root); Depth is 0 for a root.
	ParentID string
	RootID   string
	Depth    int
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
	// ErrTokenIssuerGone: the issuing token is not live (revoked, expired or unknown).
	ErrTokenIssuerGone = errors.New("issuing token is not live")
	// ErrTokenOutlivesIssuer: the token would expire after its issuer.
	ErrTokenOutlivesIssuer = errors.New("token would outlive its issuer")
	// ErrTokenLineageFull: MaxTokenLineage tokens were minted under the root already, or the
	// new token would be deeper than MaxTokenDepth.
	ErrTokenLineageFull = errors.New("token lineage full")
	// ErrTokenLegacyIssuer: the issuing token was written before token lineage (legacyKey):
	// nothing minted with it could be revoked with it, so it mints nothing.
	ErrTokenLegacyIssuer = errors.New("issuing token predates token lineage")
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
	// MaxLineage bounds the tokens minted under one root (default MaxTokenLineage).
	MaxLineage int
	Metrics    *Metrics
	Logger     *slog.Logger
}

// Tokens is the token metadata repository.
type Tokens struct {
	c          rueidis.Client
	keys       Keys
	hasher     *keyhash.Hasher
	safety     time.Duration
	max        int
	maxLineage int
	tags       sync.Map // tenant → tag, see tag
	ntags      atomic.Int64
	metrics    *Metrics
	log        *slog.Logger
}

var (
	scriptTokenCreate = script("token_create")
	scriptTokenRevoke = script("token_revoke")
	// scriptTokenRevokeLegacy revokes a hash under its legacy key (see legacyKey).
	scriptTokenRevokeLegacy = script("token_revoke_legacy")
	scriptTokenList         = script("token_list")
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
	if o.MaxLineage <= 0 || o.MaxLineage > MaxTokenLineage {
		o.MaxLineage = MaxTokenLineage
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tokens{c: s.Client, keys: Keys{Prefix: o.Prefix}, hasher: o.Hasher, safety: o.SafetyWindow,
		max: o.MaxPerTenant, maxLineage: o.MaxLineage, metrics: o.Metrics, log: o.Logger}, nil
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

// tag is the tenant's hash tag. The per-request check needs it for every token, so tags are
// memoized (a keyed HMAC per request would cost more than the cached HMGET itself), up to
// maxTagMemo tenants; past that the rest are computed each time.
func (r *Tokens) tag(tenant string) string {
	if v, ok := r.tags.Load(tenant); ok {
		return v.(string)
	}
	t := r.hasher.Tag("tenant", 9, tenant)
	if r.ntags.Load() < maxTagMemo {
		if _, loaded := r.tags.LoadOrStore(tenant, t); !loaded {
			r.ntags.Add(1)
		}
	}
	return t
}

// maxTagMemo bounds the memoized tenant tags (about 200 B each).
const maxTagMemo = 4096

func (r *Tokens) hashKey(tag, id string) string { return r.keys.Key("token", tag, id) }

// legacyKey is where gateways before token lineage wrote a token's hash (its own hash tag).
// Such hashes are still read (check, introspection, get, list) and revoked until they expire;
// they mint nothing (ErrTokenLegacyIssuer).
func (r *Tokens) legacyKey(id string) string { return r.keys.Key("token", id) }

func allNil(vals []rueidis.RedisMessage) bool {
	for i := range vals {
		if !vals[i].IsNil() {
			return false
		}
	}
	return true
}

func (r *Tokens) kidsKey(tag, id string) string { return r.keys.Key("tokens", tag, "kids", id) }

func (r *Tokens) indexKeys(tag string) []string {
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

// Create writes a token in one script: the tenant index entry, the metadata hash with a key
// TTL of expiry − now + the safety window and, when t.ParentID is set, the link to its issuer
// (the issuer's children set and the root's lineage count). The issuer must be live, of the
// same tenant, and expire no earlier than t (ErrTokenIssuerGone, ErrTokenOutlivesIssuer).
func (r *Tokens) Create(ctx context.Context, t Token) error {
	if err := t.validate(); err != nil {
		return err
	}
	tag := r.tag(t.Tenant)
	expMs := t.ExpiresAt.UnixMilli()
	keys := append(r.indexKeys(tag), r.hashKey(tag, t.ID))
	args := []string{t.ID, ms(expMs), ms(r.safety.Milliseconds()), strconv.Itoa(r.max), strconv.Itoa(tokenPruneMax), t.Tenant, "", ""}
	fields := []string{"tenantId", t.Tenant, "subject", t.Subject, "tokenType", t.Type,
		"scopes", strings.Join(t.Scopes, " "), "description", t.Description,
		"issuedAtMs", ms(t.IssuedAt.UnixMilli()), "expiresAtMs", ms(expMs),
		"revoked", "0", "revokedAtMs", "0", "revokedReason", "",
		"schemaVersion", strconv.Itoa(SchemaVersion)}
	if t.ParentID != "" {
		parentRoot, depth, err := r.lineage(ctx, tag, t.Tenant, t.ParentID)
		if err != nil {
			return err
		}
		if depth+1 > MaxTokenDepth {
			r.metrics.Transition(ctx, tokenObj, "create", "lineage_full")
			return fmt.Errorf("token %s: %d generations below its root: %w", t.ID, depth+1, ErrTokenLineageFull)
		}
		root := parentRoot
		if root == "" {
			root = t.ParentID
		}
		keys = append(keys, r.hashKey(tag, t.ParentID), r.kidsKey(tag, t.ParentID), r.hashKey(tag, root))
		args[6], args[7] = strconv.Itoa(r.maxLineage), parentRoot
		fields = append(fields, "parentId", t.ParentID, "rootId", root, "depth", strconv.Itoa(depth+1))
	}
	rep, err := r.run(ctx, "token_create", scriptTokenCreate, keys, append(args, fields...))
	if err != nil {
		return err
	}
	switch rep.Code() {
	case CodeOK: // {'OK', hash TTL in ms}
		ttl, err := rep.Int(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || ttl <= 0 {
			return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
		}
		r.metrics.Transition(ctx, tokenObj, "create", "ok")
		return nil
	case CodeBound: // {'BOUND', 'index' | 'lineage'}
		which, err := rep.Str(0)
		switch {
		case rep.Want(1) == nil && err == nil && which == "index":
			r.metrics.Transition(ctx, tokenObj, "create", "index_full")
			return fmt.Errorf("tenant index: %w", ErrTokensFull)
		case rep.Want(1) == nil && err == nil && which == "lineage":
			r.metrics.Transition(ctx, tokenObj, "create", "lineage_full")
			return fmt.Errorf("token %s: %w", t.ID, ErrTokenLineageFull)
		}
		return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
	case CodeIssuerGone: // {'ISSUER_GONE', 'not_live' | 'lineage_changed'}
		why, err := rep.Str(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || why != "not_live" && why != "lineage_changed" {
			return r.badReply(ctx, "token_create", cmp.Or(err, rep.Unexpected()))
		}
		r.metrics.Transition(ctx, tokenObj, "create", "issuer_gone")
		return fmt.Errorf("token %s issuer %s: %w", t.ID, t.ParentID, ErrTokenIssuerGone)
	case CodeExists:
		return fmt.Errorf("token %s: %w", t.ID, ErrTokenExists)
	case CodeExpired, CodeOutlivesIssuer:
		if err := rep.Want(0); err != nil {
			return r.badReply(ctx, "token_create", err)
		}
		return rep.Err("token " + t.ID)
	}
	return r.badReply(ctx, "token_create", rep.Unexpected())
}

// run executes a token script and decodes its reply (reply.go); a failure is counted as a
// script error and classified (connectivity → store.ErrUnavailable).
func (r *Tokens) run(ctx context.Context, name string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	rep, err := callScript(ctx, r.c, name, l, keys, args)
	if err != nil {
		r.metrics.ScriptError(ctx, name)
		return Reply{}, redisErr(strings.ReplaceAll(name, "_", " "), err)
	}
	return rep, nil
}

// badReply counts a reply of the wrong shape (err wraps ErrReply) as a script error.
func (r *Tokens) badReply(ctx context.Context, name string, err error) error {
	r.metrics.ScriptError(ctx, name)
	return err
}

// lineage reads an issuer's rootId ("" when it is a root) and depth.
func (r *Tokens) lineage(ctx context.Context, tag, tenant, id string) (string, int, error) {
	if !ValidTokenID(id) {
		return "", 0, fmt.Errorf("issuer: %w", ErrTokenIssuerGone)
	}
	vals, err := r.c.Do(ctx, r.c.B().Hmget().Key(r.hashKey(tag, id)).Field("tenantId", "rootId", "depth").Build()).ToArray()
	if err != nil {
		return "", 0, redisErr("token lineage", err)
	}
	if len(vals) != 3 {
		return "", 0, fmt.Errorf("token lineage: %d values for 3 fields", len(vals))
	}
	if tn, err := vals[0].ToString(); err != nil || tn != tenant {
		legacy, err := r.c.Do(ctx, r.c.B().Hget().Key(r.legacyKey(id)).Field("tenantId").Build()).ToString()
		if err == nil && legacy == tenant {
			return "", 0, fmt.Errorf("issuer %s: %w", id, ErrTokenLegacyIssuer)
		}
		return "", 0, fmt.Errorf("issuer %s: %w", id, ErrTokenIssuerGone)
	}
	root, _ := vals[1].ToString()
	depth := 0
	if d, err := vals[2].ToString(); err == nil {
		if depth, err = strconv.Atoi(d); err != nil || depth < 1 {
			return "", 0, fmt.Errorf("%w: token %s has a bad depth", ErrCorrupt, id)
		}
	}
	if (root == "") != (depth == 0) || (root != "" && !ValidTokenID(root)) {
		return "", 0, fmt.Errorf("%w: token %s has an inconsistent lineage", ErrCorrupt, id)
	}
	return root, depth, nil
}

// Get reads a token of tenant. A token of another tenant is NotFound, like an unknown one.
func (r *Tokens) Get(ctx context.Context, tenant, id string) (Token, error) {
	if !ValidTokenID(id) {
		return Token{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	m, err := r.c.Do(ctx, r.c.B().Hgetall().Key(r.hashKey(r.tag(tenant), id)).Build()).AsStrMap()
	if err == nil && len(m) == 0 {
		m, err = r.c.Do(ctx, r.c.B().Hgetall().Key(r.legacyKey(id)).Build()).AsStrMap()
	}
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
		ParentID:      f.opt("parentId"),
		RootID:        f.opt("rootId"),
		Depth:         int(f.optInt64("depth")),
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
	r.log.WarnContext(ctx, "corrupt object", "object", tokenObj, "key_pattern", r.keys.Prefix+":v1:token:{<tenantTag>}:<tokenId>", "fields", bad)
}

// tokenStateFields are the only fields the per-request check reads (never HGETALL).
var tokenStateFields = []string{"revoked", "expiresAtMs", "tenantId", "scopes", "schemaVersion"}

// State reads what the per-request check needs with one HMGET of tenant's token id (the
// tenant comes from the verified JWT, so another tenant's id is simply not found). With cacheTTL > 0 it goes
// through rueidis client-side caching: a hot token costs no round trip, and a write to its
// hash (a revocation) invalidates every replica's copy through Redis's tracking push; cacheTTL
// caps staleness should a push be lost. A missing hash is NotFound; a malformed one ErrCorrupt.
func (r *Tokens) State(ctx context.Context, tenant, id string, cacheTTL time.Duration) (TokenState, error) {
	if !ValidTokenID(id) {
		return TokenState{}, fmt.Errorf("token: %w", apperr.NotFound)
	}
	read := func(key string) ([]rueidis.RedisMessage, bool, error) {
		cmd := r.c.B().Hmget().Key(key).Field(tokenStateFields...)
		var res rueidis.RedisResult
		if cacheTTL > 0 {
			res = r.c.DoCache(ctx, cmd.Cache(), cacheTTL)
		} else {
			res = r.c.Do(ctx, cmd.Build())
		}
		vals, err := res.ToArray()
		return vals, res.IsCacheHit(), err
	}
	vals, hit, err := read(r.hashKey(r.tag(tenant), id))
	if err == nil && allNil(vals) {
		// Not under the tenant-tagged key: a token issued before it, under its legacy key.
		vals, hit, err = read(r.legacyKey(id))
	}
	if err != nil {
		return TokenState{}, redisErr("token state", err)
	}
	st := TokenState{CacheHit: hit}
	m, _, err := pooledFields(vals, tokenStateFields)
	if err != nil {
		return st, fmt.Errorf("token state: %w", err)
	}
	defer releaseFields(m)
	if len(m) == 0 {
		r.metrics.Read(ctx, tokenObj, Missing)
		return st, fmt.Errorf("token %s: %w", id, apperr.NotFound)
	}
	f := fields{m: m}
	switch m["revoked"] {
	case "1":
		st.Revoked = true
	case "0":
	default:
		f.bad = append(f.bad, "revoked")
	}
	st.ExpiresAtMs, st.Tenant, st.Scope = f.int64("expiresAtMs"), f.str("tenantId"), f.str("scopes")
	o := f.schema()
	if o == Corrupt {
		r.metrics.Read(ctx, tokenObj, Corrupt)
		r.logCorrupt(ctx, f.bad)
		return TokenState{}, f.err(tokenObj)
	}
	r.metrics.Read(ctx, tokenObj, o)
	return st, nil
}

// Revoke revokes a token of tenant and every token minted from it, transitively, in one
// script (idempotent). It returns what happened to the token itself and the ids of the
// descendants revoked now. Unknown ids, another tenant's included, are a no-op
// (TokenRevokeUnknown) that writes nothing. The descendants are read first, level by level
// (at most MaxTokenDepth round trips, at most MaxTokenLineage ids), and the script refuses
// ('retry') when a token was minted under them meanwhile; the read is then repeated.
func (r *Tokens) Revoke(ctx context.Context, tenant, id, reason string) (TokenRevokeResult, []string, error) {
	if !ValidTokenID(id) {
		return TokenRevokeUnknown, nil, nil
	}
	if len(reason) > maxTokenReasonBytes || !utf8.ValidString(reason) || tokenHasControl(reason) {
		return TokenRevokeUnknown, nil, apperr.New(apperr.Validation, "The revocation reason is too long or has control characters.")
	}
	tag := r.tag(tenant)
	for range maxRevokeRetries {
		desc, err := r.descendants(ctx, tag, id)
		if err != nil {
			return TokenRevokeUnknown, nil, err
		}
		keys := make([]string, 0, 2*len(desc)+2)
		keys = append(keys, r.hashKey(tag, id))
		for _, d := range desc {
			keys = append(keys, r.hashKey(tag, d))
		}
		keys = append(keys, r.kidsKey(tag, id))
		for _, d := range desc {
			keys = append(keys, r.kidsKey(tag, d))
		}
		args := append([]string{tenant, reason, "revoked with its issuer's lineage: ancestor " + id + " was revoked"}, desc...)
		rep, err := r.run(ctx, "token_revoke", scriptTokenRevoke, keys, args)
		if err != nil {
			return TokenRevokeUnknown, nil, err
		}
		// {'OK', descendant id...} | {'NOT_FOUND'} | {'ALREADY_REVOKED'} | {'RETRY'}
		revoked, err := rep.Strs(0)
		if err == nil && rep.Code() != CodeOK {
			err = rep.Want(0)
		}
		if err != nil {
			return TokenRevokeUnknown, nil, r.badReply(ctx, "token_revoke", err)
		}
		var res TokenRevokeResult
		switch rep.Code() {
		case CodeRetry:
			continue
		case CodeNotFound:
			if res, err = r.revokeLegacy(ctx, tenant, id, reason); err != nil {
				return TokenRevokeUnknown, nil, err
			}
		case CodeAlreadyRevoked:
			res = TokenAlreadyRevoked
		case CodeOK:
			res = TokenRevoked
		default:
			return TokenRevokeUnknown, nil, r.badReply(ctx, "token_revoke", rep.Unexpected())
		}
		r.metrics.Transition(ctx, tokenObj, "revoke", res.String())
		return res, revoked, nil
	}
	return TokenRevokeUnknown, nil, fmt.Errorf("token revoke %s: tokens kept being minted under it: %w", id, store.ErrUnavailable)
}

// revokeLegacy revokes a token under its legacy key (see legacyKey); unknown and another
// tenant's alike are TokenRevokeUnknown.
func (r *Tokens) revokeLegacy(ctx context.Context, tenant, id, reason string) (TokenRevokeResult, error) {
	rep, err := callScript(ctx, r.c, "token_revoke_legacy", scriptTokenRevokeLegacy, []string{r.legacyKey(id)}, []string{tenant, reason})
	if err != nil {
		r.metrics.ScriptError(ctx, "token_revoke_legacy")
		return TokenRevokeUnknown, redisErr("token revoke", err)
	}
	if err := rep.Want(0); err != nil { // {'OK'} | {'ALREADY_REVOKED'} | {'NOT_FOUND'}
		return TokenRevokeUnknown, r.badReply(ctx, "token_revoke_legacy", err)
	}
	switch rep.Code() {
	case CodeNotFound:
		return TokenRevokeUnknown, nil
	case CodeOK:
		return TokenRevoked, nil
	case CodeAlreadyRevoked:
		return TokenAlreadyRevoked, nil
	}
	return TokenRevokeUnknown, r.badReply(ctx, "token_revoke_legacy", rep.Unexpected())
}

// descendants lists the ids minted from id, transitively, breadth first, from the children
// sets: at most MaxTokenDepth levels and MaxTokenLineage ids (the bounds a create enforces).
func (r *Tokens) descendants(ctx context.Context, tag, id string) ([]string, error) {
	var out []string
	seen := map[string]bool{id: true}
	level := []string{id}
	for depth := 0; len(level) > 0; depth++ {
		if depth > MaxTokenDepth || len(out) > MaxTokenLineage {
			return nil, fmt.Errorf("%w: token %s has more descendants than a lineage may hold", ErrCorrupt, id)
		}
		cmds := make(rueidis.Commands, 0, len(level))
		for _, l := range level {
			cmds = append(cmds, r.c.B().Smembers().Key(r.kidsKey(tag, l)).Build())
		}
		var next []string
		for _, res := range r.c.DoMulti(ctx, cmds...) {
			kids, err := res.AsStrSlice()
			if err != nil {
				return nil, redisErr("token children", err)
			}
			for _, k := range kids {
				if !ValidTokenID(k) {
					return nil, fmt.Errorf("%w: a token children set holds a malformed member", ErrCorrupt)
				}
				if !seen[k] {
					seen[k] = true
					next = append(next, k)
				}
			}
		}
		out = append(out, next...)
		level = next
	}
	return out, nil
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
	tag := r.tag(tenant)
	rep, err := r.run(ctx, "token_list", scriptTokenList, r.indexKeys(tag),
		[]string{cursor, strconv.Itoa(limit + 1), strconv.Itoa(tokenPruneMax)})
	if err != nil {
		return nil, "", err
	}
	ids, err := rep.Strs(0) // {'OK', tokenId...}
	if err == nil && rep.Code() != CodeOK {
		err = rep.Unexpected()
	}
	if err != nil {
		return nil, "", r.badReply(ctx, "token_list", err)
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
		cmds = append(cmds, r.c.B().Hgetall().Key(r.hashKey(tag, id)).Build())
	}
	maps := make([]map[string]string, len(ids))
	var legacy []int
	for i, res := range r.c.DoMulti(ctx, cmds...) {
		if maps[i], err = res.AsStrMap(); err != nil {
			return nil, "", redisErr("token list read", err)
		}
		if len(maps[i]) == 0 {
			legacy = append(legacy, i)
		}
	}
	if len(legacy) > 0 { // issued before the tenant-tagged key, or gone
		cmds = cmds[:0]
		for _, i := range legacy {
			cmds = append(cmds, r.c.B().Hgetall().Key(r.legacyKey(ids[i])).Build())
		}
		for j, res := range r.c.DoMulti(ctx, cmds...) {
			if maps[legacy[j]], err = res.AsStrMap(); err != nil {
				return nil, "", redisErr("token list read", err)
			}
		}
	}
	out := make([]Token, 0, len(ids))
	for i, m := range maps {
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
