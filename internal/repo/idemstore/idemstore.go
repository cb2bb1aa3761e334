// Package idemstore keeps Idempotency-Key markers and the responses they replay in Redis. It
// implements idempotency.Store; the rules of a keyed create are the service's
// (internal/idempotency).
//
// The first request claims a marker string with SET NX PX (TTL: default 24 h) holding a
// PENDING envelope: the request hash, the id the create will use (derived from the key by
// internal/idempotency), and an in-flight lease (server time). On success the marker is
// replaced — keeping its TTL (SET XX KEEPTTL in a script that first checks the marker is still
// this request's) — by a DONE envelope holding the response (status, body, Location, ETag). A
// refused or failed create releases its marker, so only successes are replayed; a claim whose
// reply was lost (timeout) is abandoned by its owner (idem_abandon.lua).
//
// A retry with the same key:
//   - DONE, same request hash → the stored response, byte for byte (Idempotent-Replayed: true);
//   - any state, different request hash → 422 idempotency-key-reused;
//   - PENDING with a live lease → 409 request-in-flight, Retry-After = the lease left (the
//     lease is LeaseFor the Redis timeout: 5 s at the default 500 ms);
//   - PENDING with a passed lease (the first request crashed or hung between claim and
//     completion) → the retry takes the marker over, compare-and-set on the exact value it read,
//     keeping the TTL, and creates with the id the first request planned. The create scripts
//     return an object that already exists under that id, so a request that crashed after
//     writing the object but before completing the marker is not duplicated. If the first
//     request was merely slow and completes after the takeover, its completion is refused (the
//     marker is no longer its own) and the retry's response is the one stored.
package idemstore

import (
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/store"
)

// Defaults and bounds of the idempotency store.
const (
	DefaultTTL   = 24 * time.Hour
	DefaultLease = 30 * time.Second
	// MinLease is the shortest lease LeaseFor answers.
	MinLease = time.Second
	// MaxBodyBytes bounds a stored response body (quote and case bodies are far smaller).
	MaxBodyBytes = 16 << 10
	// MaxKeyBytes bounds the Idempotency-Key header value (only its SHA-256 is stored).
	MaxKeyBytes = 255
	// DefaultPerTenant is a tenant's quota of live markers by default.
	DefaultPerTenant = 100000
	// MaxPerTenant bounds GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS (the quota set's declared bound).
	MaxPerTenant = 1000000
)

// Options configure the store.
type Options struct {
	Prefix string
	Hasher *keyhash.Hasher
	TTL    time.Duration // marker lifetime from the first claim; default 24 h
	Lease  time.Duration // in-flight lease; default 30 s
	// MaxPerTenant caps a tenant's live markers (GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS); default
	// DefaultPerTenant.
	MaxPerTenant int
	Metrics      *repo.Metrics
	Logger       *slog.Logger
}

// Store stores Idempotency-Key markers and responses (it implements idempotency.Store).
type Store struct {
	repo.Base
	writes repo.Writes // the claim and the completion, confirmed
	ttl    time.Duration
	lease  time.Duration
	quota  repo.Quota // the tenant's quota of live markers
}

var _ idempotency.Store = (*Store)(nil)

// New returns the idempotency store on s.
func New(s *store.Store, o Options) (*Store, error) {
	o.TTL = cmp.Or(o.TTL, DefaultTTL) // before the lease, which it bounds
	base, baseErr := repo.NewBase("idempotency records", s, o.Prefix, o.Hasher, o.Metrics, o.Logger)
	quota, quotaErr := repo.TenantQuota("idempotency keys", "GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS", o.MaxPerTenant, DefaultPerTenant, MaxPerTenant)
	if err := errors.Join(baseErr, quotaErr,
		repo.DefaultWithin("idempotency lease", &o.Lease, DefaultLease, 10*time.Millisecond, o.TTL),
	); err != nil {
		return nil, err
	}
	return &Store{Base: base, writes: repo.NewWrites(s, o.Metrics), ttl: o.TTL, lease: o.Lease,
		quota: quota}, nil
}

// LeaseFor is the in-flight lease for a gateway whose Redis calls are each bounded by timeout:
// a live first request holds its claim for a handful of calls (the claim, at most three create
// scripts, the completion), so 10 × timeout, within MinLease and DefaultLease. The lease is
// what a retry of a timed-out create waits at most (409 request-in-flight) when the first
// attempt's claim or release reached Redis late. A lease that passes while the first request
// still runs is harmless: keyed creates derive their id from the key, so the takeover lands on
// the same object.
func LeaseFor(timeout time.Duration) time.Duration {
	return min(max(10*timeout, MinLease), DefaultLease)
}

//go:embed *.lua
var scriptFiles embed.FS

var (
	scriptClaim    = repo.LoadScript(scriptFiles, "idem_claim")
	scriptComplete = repo.LoadScript(scriptFiles, "idem_complete")
	scriptRelease  = repo.LoadScript(scriptFiles, "idem_release")
	scriptAbandon  = repo.LoadScript(scriptFiles, "idem_abandon")
)

// The replies of the scripts (each script's header shows them).
var (
	claimReplies = repo.ReplyShapes{repo.CodeClaimed: 2, repo.CodeExists: 2, repo.CodeQuota: 1}
	// idem_complete, idem_release, idem_abandon: {'OK'} done | {'STALE'} the marker no longer
	// holds the claim.
	heldReplies = repo.ReplyShapes{repo.CodeOK: 0, repo.CodeStale: 0}
)

// markerKey is the marker of sc: <p>:v1:idem:{<tenantTag>}:<operation>:<sha256(key)>.
func (r *Store) markerKey(sc idempotency.Scope) string {
	sum := sha256.Sum256([]byte(sc.Key))
	return r.Keys.Key("idem", r.Hasher.TenantTag(sc.Tenant), sc.Operation, hex.EncodeToString(sum[:]))
}

// quotaOf is the tenant's quota set and the marker's member in it (<operation>:<keyHash>, the
// marker key's part after its tag) for the marker key.
func (r *Store) quotaOf(marker string) (set, member string) {
	i := strings.Index(marker, "}:")
	tag := marker[strings.LastIndex(marker[:i], "{")+1 : i]
	return r.Keys.Key("quota", tag, "idem"), marker[i+2:]
}
