package repo

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/idempotency"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/store"
)

// Idempotency-Key handling for creates.
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
//     lease is IdempotencyLeaseFor the Redis timeout: 5 s at the default 500 ms);
//   - PENDING with a passed lease (the first request crashed or hung between claim and
//     completion) → the retry takes the marker over, compare-and-set on the exact value it read,
//     keeping the TTL, and creates with the id the first request planned. The create scripts
//     return an object that already exists under that id, so a request that crashed after
//     writing the object but before completing the marker is not duplicated. If the first
//     request was merely slow and completes after the takeover, its completion is refused (the
//     marker is no longer its own) and the retry's response is the one stored.

// Defaults of the idempotency store.
const (
	DefaultIdempotencyTTL   = 24 * time.Hour
	DefaultIdempotencyLease = 30 * time.Second
	// MinIdempotencyLease is the shortest lease IdempotencyLeaseFor answers.
	MinIdempotencyLease = time.Second
	// MaxIdemBodyBytes bounds a stored response body (quote and case bodies are far smaller).
	MaxIdemBodyBytes = 16 << 10
	// MaxIdemKeyBytes bounds the Idempotency-Key header value (only its SHA-256 is stored).
	MaxIdemKeyBytes = 255
)

// Marker states.
const (
	idemPending = "PENDING"
	idemDone    = "DONE"
	// schema 1 names, read as PENDING / DONE.
	idemV1Processing = "PROCESSING"
	idemV1Completed  = "COMPLETED"
)

var (
	opPattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,31}$`)
	tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// IdempotencyOptions configure Idempotency.
type IdempotencyOptions struct {
	Prefix string
	Hasher *keyhash.Hasher
	TTL    time.Duration // marker lifetime from the first claim; default 24 h
	Lease  time.Duration // in-flight lease; default 30 s
	// MaxPerTenant caps a tenant's live markers (GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS); default
	// DefaultIdemPerTenant.
	MaxPerTenant int
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Idempotency stores Idempotency-Key markers and responses (it implements idempotency.Store).
type Idempotency struct {
	c    rueidis.Client
	keys Keys
	h    *keyhash.Hasher
	ttl  time.Duration
	ls   time.Duration
	max  int
	m    *Metrics
	log  *slog.Logger
}

var _ idempotency.Store = (*Idempotency)(nil)

// NewIdempotency returns the idempotency store on s.
func NewIdempotency(s *store.Store, o IdempotencyOptions) (*Idempotency, error) {
	o.TTL = cmp0(o.TTL, DefaultIdempotencyTTL)
	o.Lease = cmp0(o.Lease, DefaultIdempotencyLease)
	o.MaxPerTenant = cmp0(o.MaxPerTenant, DefaultIdemPerTenant)
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: idempotency needs a store", ErrBadOptions)
	case o.Prefix == "" || o.Hasher == nil:
		return nil, fmt.Errorf("%w: idempotency needs a key prefix and a hasher", ErrBadOptions)
	case o.MaxPerTenant < 1 || o.MaxPerTenant > MaxIdemPerTenant:
		return nil, fmt.Errorf("%w: idempotency keys per tenant %d not within 1..%d", ErrBadOptions, o.MaxPerTenant, MaxIdemPerTenant)
	case o.Lease < 10*time.Millisecond || o.TTL < o.Lease:
		return nil, fmt.Errorf("%w: idempotency lease %s must be ≥10ms and within the TTL %s", ErrBadOptions, o.Lease, o.TTL)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Idempotency{c: s.Client, keys: Keys{Prefix: o.Prefix}, h: o.Hasher, ttl: o.TTL, ls: o.Lease, max: o.MaxPerTenant, m: o.Metrics, log: o.Logger}, nil
}

var (
	scriptIdemClaim    = script("idem_claim")
	scriptIdemComplete = script("idem_complete")
	scriptIdemRelease  = script("idem_release")
	scriptIdemAbandon  = script("idem_abandon")
)

// The replies of the idempotency scripts (each script's header shows them).
var (
	idemClaimReplies = ReplyShapes{CodeClaimed: 2, CodeExists: 2, CodeQuota: 1}
	// idem_complete, idem_release, idem_abandon: {'OK'} done | {'STALE'} the marker no longer
	// holds the claim.
	idemHeldReplies = ReplyShapes{CodeOK: 0, CodeStale: 0}
)

// quotaKey is the tenant's set of live markers (member <operation>:<keyHash>, score the
// marker's expiry in ms): its Idempotency-Key quota.
func (x *Idempotency) quotaKey(tenant string) string {
	return x.keys.Key("quota", x.h.TenantTag(tenant), "idem")
}

func (x *Idempotency) markerKey(sc idempotency.Scope) string {
	sum := sha256.Sum256([]byte(sc.Key))
	return x.keys.Key("idem", x.h.TenantTag(sc.Tenant), sc.Operation, hex.EncodeToString(sum[:]))
}

// quotaOf is the tenant's quota set and the marker's member in it (<operation>:<keyHash>, the
// marker key's part after its tag) for the marker key.
func (x *Idempotency) quotaOf(marker string) (set, member string) {
	i := strings.Index(marker, "}:")
	tag := marker[strings.LastIndex(marker[:i], "{")+1 : i]
	return x.keys.Key("quota", tag, "idem"), marker[i+2:]
}

// Claim claims sc for a request with requestHash that would create resourceID. It answers a
// claim to proceed, a stored response to replay, or a refusal: IdempotencyMismatch (422) for
// another request under the same key, InFlight (409) while the first request's lease lasts.
func (x *Idempotency) Claim(ctx context.Context, sc idempotency.Scope, requestHash, resourceID string) (*idempotency.Claim, error) {
	if err := checkScope(sc, requestHash, resourceID); err != nil {
		return nil, err
	}
	key, owner := x.markerKey(sc), newOwner()
	set, member := x.quotaOf(key)
	expected, created, tookOver := "", "", false
	for range 3 {
		rep, err := RunScript(ctx, x.c, x.m, "idem_claim", "idempotency claim", scriptIdemClaim, []string{key, set},
			[]string{owner, requestHash, resourceID, FormatMs(x.ls.Milliseconds()), FormatMs(x.ttl.Milliseconds()),
				strconv.Itoa(SchemaVersion), expected, created, strconv.Itoa(x.max), member})
		if err != nil {
			if errors.Is(err, store.ErrUnavailable) {
				x.abandon(ctx, key, owner)
			}
			return nil, err
		}
		if rep.Code() == CodeQuota { // {'QUOTA', ms until the earliest live marker expires}
			wait, err := rep.Int(0)
			if err = cmp.Or(idemClaimReplies.Check(rep), err); err != nil {
				return nil, BadReply(ctx, x.m, "idem_claim", err)
			}
			x.m.Event(ctx, "idempotency", "quota")
			return nil, QuotaError("idempotency keys", "GATEWAY_TENANT_MAX_IDEMPOTENCY_KEYS", x.max, wait)
		}
		// {'CLAIMED', value, nowMs} | {'EXISTS', current value or '', nowMs}
		d := rep.Reader()
		cur, now := d.Str(0), d.Int(1)
		err = cmp.Or(idemClaimReplies.Check(rep), d.Err())
		if err != nil {
			return nil, BadReply(ctx, x.m, "idem_claim", err)
		}
		if rep.Code() == CodeClaimed {
			env, _ := decodeEnvelope(cur)
			return &idempotency.Claim{ResourceID: resourceID, TookOver: tookOver,
				Lease: idempotency.Lease{Marker: key, Held: cur, RequestHash: requestHash, CreatedAtMs: env.CreatedAtMs}}, nil
		}
		if cur == "" { // expired between the two steps: claim afresh
			expected, created, tookOver = "", "", false
			continue
		}
		env, outcome, err := x.read(ctx, cur)
		if err != nil {
			return nil, err
		}
		switch {
		case env.RequestHash != requestHash:
			x.m.Event(ctx, "idempotency", "mismatch")
			return nil, apperr.New(apperr.IdempotencyMismatch, "This Idempotency-Key was used with a different request body.")
		case env.State == idemDone:
			x.m.Event(ctx, "idempotency", "replay")
			body := []byte(*env.Body)
			return &idempotency.Claim{Replay: &idempotency.Response{Status: env.Status, Body: body, Location: env.Location, ETag: env.ETag}}, nil
		case x.leaseUntil(env, outcome) > now:
			x.m.Event(ctx, "idempotency", "in_flight")
			e := apperr.New(apperr.InFlight, "A request with this Idempotency-Key is still being processed; retry shortly.")
			e.RetryAfter = time.Duration(x.leaseUntil(env, outcome)-now) * time.Millisecond
			return nil, e
		}
		// The first request's lease passed: take over its claim and its planned id.
		x.m.Event(ctx, "idempotency", "takeover")
		expected, created, tookOver = cur, FormatMs(env.CreatedAtMs), true
		if tokenPattern.MatchString(env.ResourceID) {
			resourceID = env.ResourceID
		}
	}
	return nil, apperr.New(apperr.InFlight, "The Idempotency-Key is contended; retry shortly.")
}

// Complete stores resp as the key's response, keeping the marker's TTL. A claim taken over by
// a later request (lease passed) is not overwritten.
func (x *Idempotency) Complete(ctx context.Context, cl *idempotency.Claim, resp idempotency.Response) error {
	if cl == nil || cl.Lease.Held == "" {
		return nil
	}
	if len(resp.Body) > MaxIdemBodyBytes {
		_ = x.Release(ctx, cl)
		return apperr.Newf(apperr.BoundExceeded, "The response is over %d bytes and cannot be stored for replay.", MaxIdemBodyBytes)
	}
	body := string(resp.Body)
	env := idemEnvelope{SchemaVersion: SchemaVersion, State: idemDone, RequestHash: cl.Lease.RequestHash, ResourceID: cl.ResourceID,
		Status: resp.Status, Location: resp.Location, ETag: resp.ETag, Body: &body,
		CreatedAtMs: cl.Lease.CreatedAtMs, UpdatedAtMs: time.Now().UnixMilli()}
	raw, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("idempotency complete: %w", err)
	}
	rep, err := RunScript(ctx, x.c, x.m, "idem_complete", "idempotency complete", scriptIdemComplete,
		[]string{cl.Lease.Marker}, []string{cl.Lease.Held, string(raw)})
	if err != nil {
		return err
	}
	if err := idemHeldReplies.Check(rep); err != nil {
		return BadReply(ctx, x.m, "idem_complete", err)
	}
	if rep.Code() == CodeStale {
		x.m.Event(ctx, "idempotency", "lost_lease")
		x.log.WarnContext(ctx, "idempotency marker was taken over before completion", "key", "idem:{*}")
	}
	return nil
}

// Release drops the claim after a refused or failed request.
func (x *Idempotency) Release(ctx context.Context, cl *idempotency.Claim) error {
	if cl == nil || cl.Lease.Held == "" {
		return nil
	}
	set, member := x.quotaOf(cl.Lease.Marker)
	rep, err := RunScript(ctx, x.c, x.m, "idem_release", "idempotency release", scriptIdemRelease,
		[]string{cl.Lease.Marker, set}, []string{cl.Lease.Held, member})
	if err != nil {
		return err
	}
	// {'STALE'}: the marker is no longer this request's (taken over or expired); left alone.
	if err := idemHeldReplies.Check(rep); err != nil {
		return BadReply(ctx, x.m, "idem_release", err)
	}
	return nil
}

// abandon drops owner's claim on key after the claim call failed without a reply (Redis
// stalled or the connection broke): the claim may have run, or may run once Redis answers,
// and would then hold the key against the client's retry for a whole lease (409). Sent after
// the claim, it runs after it; best effort (a failure leaves the lease to pass).
func (x *Idempotency) abandon(ctx context.Context, key, owner string) {
	set, member := x.quotaOf(key)
	rep, err := RunScript(context.WithoutCancel(ctx), x.c, x.m, "idem_abandon", "idempotency abandon", scriptIdemAbandon,
		[]string{key, set}, []string{owner, member})
	if err == nil {
		err = idemHeldReplies.Check(rep)
	}
	if err != nil {
		x.log.WarnContext(ctx, "idempotency abandon failed; a lost claim holds the key until its lease passes", "err", err)
		return
	}
	if rep.Code() == CodeOK {
		x.m.Event(ctx, "idempotency", "abandoned")
	}
}

// IdempotencyLeaseFor is the in-flight lease for a gateway whose Redis calls are each bounded
// by timeout: a live first request holds its claim for a handful of calls (the claim, at most
// three create scripts, the completion), so 10 × timeout, within 1 s and
// DefaultIdempotencyLease. The lease is what a retry of a timed-out create waits at most (409
// request-in-flight) when the first attempt's claim or release reached Redis late. A lease that
// passes while the first request still runs is harmless: keyed creates derive their id from
// the key, so the takeover lands on the same object.
func IdempotencyLeaseFor(timeout time.Duration) time.Duration {
	return min(max(10*timeout, MinIdempotencyLease), DefaultIdempotencyLease)
}

func checkScope(sc idempotency.Scope, requestHash, resourceID string) error {
	switch {
	case sc.Tenant == "":
		return apperr.New(apperr.Unauthenticated, "The caller has no tenant.")
	case sc.Key == "" || len(sc.Key) > MaxIdemKeyBytes:
		return apperr.Newf(apperr.Validation, "Idempotency-Key must be 1..%d characters.", MaxIdemKeyBytes)
	case !opPattern.MatchString(sc.Operation) || !tokenPattern.MatchString(requestHash) || !tokenPattern.MatchString(resourceID):
		return fmt.Errorf("idempotency claim: malformed operation, request hash or resource id")
	}
	return nil
}

func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// idemEnvelope is the marker's value. Schema 2 is current; schema 1, the previous shape, had
// no owner and no lease (states PROCESSING / COMPLETED): a v1 PROCESSING marker's lease is
// read as createdAtMs + the configured lease.
type idemEnvelope struct {
	SchemaVersion int     `json:"schemaVersion"`
	State         string  `json:"state"`
	Owner         string  `json:"owner,omitempty"`
	RequestHash   string  `json:"requestHash"`
	ResourceID    string  `json:"resourceId"`
	LeaseUntilMs  int64   `json:"leaseUntilMs,omitempty"`
	Status        int     `json:"status,omitempty"`
	Location      string  `json:"location,omitempty"`
	ETag          string  `json:"etag,omitempty"`
	Body          *string `json:"body,omitempty"`
	CreatedAtMs   int64   `json:"createdAtMs"`
	UpdatedAtMs   int64   `json:"updatedAtMs"`
}

func decodeEnvelope(raw string) (idemEnvelope, error) {
	var env idemEnvelope
	err := json.Unmarshal([]byte(raw), &env)
	return env, err
}

// read decodes and classifies a marker: found, old schema, or corrupt (refused).
func (x *Idempotency) read(ctx context.Context, raw string) (idemEnvelope, Outcome, error) {
	x.m.Payload(ctx, "idempotency", len(raw))
	env, err := decodeEnvelope(raw)
	var bad []string
	if err != nil {
		bad = append(bad, "json")
	}
	outcome := Found
	switch env.SchemaVersion {
	case SchemaVersion:
	case SchemaVersion - 1:
		outcome = OldSchema
		switch env.State {
		case idemV1Processing:
			env.State = idemPending
		case idemV1Completed:
			env.State = idemDone
		}
	default:
		bad = append(bad, "schemaVersion")
	}
	if env.RequestHash == "" {
		bad = append(bad, "requestHash")
	}
	switch env.State {
	case idemPending:
	case idemDone:
		if env.Status < 200 || env.Status > 299 || env.Body == nil {
			bad = append(bad, "status|body")
		}
	default:
		bad = append(bad, "state")
	}
	if len(bad) > 0 {
		x.m.Read(ctx, "idempotency", Corrupt)
		x.log.ErrorContext(ctx, "corrupt object", "key", "idem:{*}", "fields", bad)
		return env, Corrupt, fmt.Errorf("%w: idempotency marker has missing or malformed fields %v", ErrCorrupt, bad)
	}
	x.m.Read(ctx, "idempotency", outcome)
	return env, outcome, nil
}

func (x *Idempotency) leaseUntil(env idemEnvelope, o Outcome) int64 {
	if env.LeaseUntilMs > 0 {
		return env.LeaseUntilMs
	}
	if o == OldSchema {
		return env.CreatedAtMs + x.ls.Milliseconds()
	}
	return 0
}
