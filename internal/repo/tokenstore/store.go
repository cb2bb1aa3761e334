// Package tokenstore keeps API-token metadata in Redis for the token service
// (internal/tokens), implementing its Store. One hash per token; every key of a tenant's
// tokens shares the tenant's tag (a keyed hash of the tenant id), so a create and a cascading
// revocation are each one script, unchanged on Redis Cluster, which also appends the change's
// events to the tenant's event stream (token.issued, token.revoked; docs/EVENTS.md):
//
//	<prefix>:v1:token:{<tenantTag>}:<tokenId>        HASH  the metadata below
//	<prefix>:v1:tokens:{<tenantTag>}:byexp           ZSET  tokenId scored by expiresAtMs (pruning)
//	<prefix>:v1:tokens:{<tenantTag>}:byid            ZSET  tokenId, score 0 (lexical = issue order)
//	<prefix>:v1:tokens:{<tenantTag>}:kids:<tokenId>  SET   ids of the tokens this token minted
//
// A token minted with another token's credentials (its issuer) records parentId, rootId (the
// first token of the lineage, minted by the bootstrap/CLI path), depth and ancestors (root
// first, so "is X above this token" is one read); the root counts every token minted under
// it (lineageCount). A lineage is bounded (tokens.MaxLineage tokens, tokens.MaxDepth
// generations), which bounds the work of one revocation. See docs/KEYS.md "## Tokens".
package tokenstore

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
	"github.com/hashgate/hashgate/internal/tokens"
)

const (
	tokenObj = "token"

	// MaxPerTenant bounds a tenant's index, the most GATEWAY_TENANT_MAX_TOKENS may be: a
	// create over the tenant's quota is refused with 429 quota-exceeded.
	MaxPerTenant = 10000
	// Field bounds (bytes) for the metadata hash.
	maxTenantBytes  = 128
	maxSubjectBytes = 128
	maxDescBytes    = 1024
	maxReasonBytes  = 128
	maxScopeBytes   = 640
	maxTypeBytes    = 16
	// fieldsMax is the most fields a token hash ever holds (13, plus parentId, rootId, depth
	// and ancestors on a minted token, or lineageCount on a root).
	fieldsMax = 17
	// maxRevokeRetries bounds the revocation's re-reads when tokens are minted under it meanwhile.
	maxRevokeRetries = 5
	// pruneMax bounds how many expired index members one call removes.
	pruneMax = 500
)

// Options configure New.
type Options struct {
	// Prefix is the key prefix (config KeyPrefix).
	Prefix string
	// Hasher derives tenant tags; required.
	Hasher *keyhash.Hasher
	// SafetyWindow is added to a token's remaining life for its key TTL (config TokenSafetyWindow).
	SafetyWindow time.Duration
	// MaxPerTenant is the tenant's token quota, live tokens (GATEWAY_TENANT_MAX_TOKENS; default
	// and at most MaxPerTenant).
	MaxPerTenant int
	// MaxLineage bounds the tokens minted under one root (default and at most tokens.MaxLineage).
	MaxLineage int
	// Retention bounds the tenant's event stream the scripts append to (default
	// events.DefaultMaxAge and DefaultMaxLen).
	Retention events.Retention
	// Audit logs each token event (nil: none).
	Audit   *events.Audit
	Metrics *repo.Metrics
	Logger  *slog.Logger
}

// Store is the token metadata store.
type Store struct {
	repo.Base
	// durable confirms revocations (repo/durable.go).
	durable      *store.Durable
	safetyWindow time.Duration
	maxPerTenant int
	maxLineage   int
	retention    events.Retention
	audit        *events.Audit
}

var _ tokens.Store = (*Store)(nil)

//go:embed *.lua
var scriptFiles embed.FS

var (
	scriptCreate = repo.LoadScript(scriptFiles, "token_create")
	scriptRevoke = repo.LoadScript(scriptFiles, "token_revoke")
	scriptList   = repo.LoadScript(scriptFiles, "token_list")
)

// New returns the store over s.
func New(s *store.Store, o Options) (*Store, error) {
	base, err := repo.NewBase("tokens", s, o.Prefix, o.Hasher, o.Metrics, o.Logger)
	if err != nil {
		return nil, err
	}
	switch {
	case o.SafetyWindow < 0:
		return nil, fmt.Errorf("%w: negative safety window", repo.ErrBadOptions)
	case o.MaxPerTenant < 0 || o.MaxPerTenant > MaxPerTenant:
		return nil, fmt.Errorf("%w: max per tenant not within 0..%d", repo.ErrBadOptions, MaxPerTenant)
	}
	if o.MaxPerTenant == 0 {
		o.MaxPerTenant = MaxPerTenant
	}
	if o.MaxLineage <= 0 || o.MaxLineage > tokens.MaxLineage {
		o.MaxLineage = tokens.MaxLineage
	}
	return &Store{Base: base, durable: s.Durable, safetyWindow: o.SafetyWindow, maxPerTenant: o.MaxPerTenant,
		maxLineage: o.MaxLineage, retention: o.Retention.OrDefault(), audit: o.Audit}, nil
}

// tag is the tenant's hash tag (keyhash's TenantTag, memoized there).
func (r *Store) tag(tenant string) string { return r.Hasher.TenantTag(tenant) }

func (r *Store) hashKey(tag, id string) string { return r.Keys.Key("token", tag, id) }

func (r *Store) kidsKey(tag, id string) string { return r.Keys.Key("tokens", tag, "kids", id) }

func (r *Store) indexKeys(tag string) []string {
	return []string{r.Keys.Key("tokens", tag, "byexp"), r.Keys.Key("tokens", tag, "byid")}
}

// badReply counts a reply of the wrong shape (err wraps repo.ErrReply) as an error of script name.
func (r *Store) badReply(ctx context.Context, name string, err error) error {
	return repo.BadReply(ctx, r.Metrics, name, err)
}

// corrupt counts, logs (field names only, never values) and refuses an unreadable record.
func (r *Store) corrupt(ctx context.Context, id string, f *repo.Fields) error {
	r.Metrics.Read(ctx, tokenObj, repo.Corrupt)
	r.Log.WarnContext(ctx, "corrupt object", "object", tokenObj, "key_pattern", r.Keys.Prefix+":v1:token:{<tenantTag>}:<tokenId>", "fields", f.BadNames())
	return fmt.Errorf("token %s: %w", id, f.Err(tokenObj))
}

// auditEvent writes the audit line of a token event the script wrote (events.Audit).
func (r *Store) auditEvent(ctx context.Context, typ events.Type, tenant, id string) {
	if r.audit == nil {
		return
	}
	o, trace := events.OriginFrom(ctx)
	r.audit.Event(ctx, events.Event{Type: typ, Tenant: tenant, Subject: id, Actor: o.Actor, RequestID: o.RequestID, TraceID: trace})
}
