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

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/store"
)

// Session statuses and authentication levels.
const (
	SessionActive      = "ACTIVE"
	SessionMFARequired = "MFA_REQUIRED"
	SessionMFAVerified = "MFA_VERIFIED"
	LevelBasic         = "BASIC"
	LevelMFA           = "MFA"
)

// ExpiredChallenge classifies a session read whose MFA challenge expired (or was never
// answered) while the session still waits in MFA_REQUIRED.
const ExpiredChallenge Outcome = "expired_challenge"

// sessObject names sessions in metrics.
const sessObject = "session"

// Bounds of a session hash: it holds at most SessionMaxFields fields and SessionMaxBytes of
// names and values. Inputs are checked against the per-field bounds before any write.
const (
	SessionMaxFields    = 24
	SessionMaxBytes     = 2048
	MaxUserIDBytes      = 128
	MaxTenantBytes      = 128
	MaxDeviceLabelBytes = 256
	MaxDeviceHashBytes  = 64
	// MaxSessionsPerUser is the largest SessionOptions.MaxPerUser: the device index never holds
	// more members, and List reads at most that many.
	MaxSessionsPerUser = 1000
)

// Session hash field names. A plain session (ACTIVE, BASIC, no device information, no MFA
// challenge, the default idle timeout, never rotated or refreshed) stores only userId,
// tenantId, schemaVersion and the createdAtMs, updatedAtMs and absoluteExpiresAtMs
// timestamps; the other fields are written when they first differ from their default:
// status (ACTIVE) by a create that requires MFA or by an MFA challenge, authLevel (BASIC) by
// a create at level MFA or by step-up, failedMfaAttempts (0) by the first wrong code,
// lastSeenAtMs (createdAtMs) by the first idle refresh, lastRotatedAtMs (createdAtMs) by
// rotation or step-up, idleTimeoutMs (ImplicitIdle) when the session's idle timeout is any
// other, the device fields when given. No transition moves a session back to ACTIVE or
// BASIC, so nothing writes a default back; hashes written before this rule hold status and
// authLevel explicitly (ACTIVE/BASIC included) and read the same (schemaVersion was not
// bumped for this, as it was not for the other optional fields: SchemaVersion is shared by
// every object type, and a gateway that requires the fields refuses a newer schema number as
// corrupt just as it refuses their absence). Hashes written before may
// also hold tokenHash (the token's SHA-256): no reader asks for it, since the key itself
// derives from 108 bits of that hash. userId and tenantId are always written: a read that
// finds neither takes the session for missing.
const (
	sfUserID          = "userId"
	sfTenantID        = "tenantId"
	sfStatus          = "status"
	sfAuthLevel       = "authLevel"
	sfCreatedAt       = "createdAtMs"
	sfUpdatedAt       = "updatedAtMs"
	sfLastSeenAt      = "lastSeenAtMs"
	sfLastRotatedAt   = "lastRotatedAtMs"
	sfMFAVerifiedAt   = "mfaVerifiedAtMs"
	sfAbsoluteExpires = "absoluteExpiresAtMs"
	sfIdleTimeout     = "idleTimeoutMs"
	sfDeviceLabel     = "deviceLabel"
	sfIPHash          = "ipHash"
	sfUserAgentHash   = "userAgentHash"
	sfFailedMFA       = "failedMfaAttempts"
	sfSchemaVersion   = "schemaVersion"
	sfChallengeID     = "mfaChallengeId"
	sfChallengeAt     = "mfaChallengeCreatedAtMs"
	// sfLoginPending ("1") marks a session created with mfaRequired: its login is not complete
	// until the MFA verify, which deletes the field. Written only then (a plain session never
	// holds it); a challenge on a logged-in session (step-up) does not write it.
	sfLoginPending = "loginPending"
)

// sessViewFields are what the full view and the device list read: never the code MAC or the
// device hashes.
var sessViewFields = []string{sfUserID, sfTenantID, sfStatus, sfAuthLevel, sfCreatedAt, sfUpdatedAt, sfLastSeenAt,
	sfLastRotatedAt, sfMFAVerifiedAt, sfAbsoluteExpires, sfIdleTimeout, sfDeviceLabel, sfFailedMFA, sfSchemaVersion,
	sfChallengeID, sfChallengeAt, sfLoginPending}

var (
	scriptSessionCreate    = script("session_create")
	scriptSessionAuthorize = script("session_authorize")
	scriptSessionRotate    = script("session_rotate")
	scriptSessionRevoke    = script("session_revoke")
	scriptSessionRevokeAll = script("session_revoke_all")
	scriptSessionPrune     = script("session_prune")
	scriptSessionChallenge = script("session_challenge")
	scriptSessionVerify    = script("session_verify")
)

// ImplicitIdle is the idle timeout of a session hash that holds no idleTimeoutMs. It is a
// constant, not the configured default: a plain session with the usual 30 minutes saves the
// field (20 B), yet changing GATEWAY_SESSION_IDLE_TIMEOUT later neither shortens nor stretches
// the windows of sessions already issued (with a changed default, new sessions store theirs).
// Schema-1 hashes, which never stored it, read with it too.
const ImplicitIdle = 30 * time.Minute

// SessionOptions configure Sessions.
type SessionOptions struct {
	// RefreshFraction: the idle window slides only when less than this share of it is left.
	RefreshFraction float64
	// MaxPerUser bounds the device index (1..MaxSessionsPerUser members): creating one more
	// live session is refused.
	MaxPerUser int
	// LimitPolicy is what a create does at MaxPerUser: evict the least recently used session
	// (LimitEvictOldest; "" means the same) or refuse (LimitRefuse).
	LimitPolicy SessionLimitPolicy
	// MFA is the per-user attempt policy of MFA verification.
	MFA ratelimit.Policy
	// CacheTTL is the hot path's client-side cache TTL (at most MaxSessionCacheTTL): Authorize
	// reads through rueidis' cache, so a hot session costs no round trip. 0, or a store without
	// client-side caching (Caps.ClientCache false: the embedded store, or caching turned off),
	// reads Redis on every call.
	CacheTTL time.Duration
	Metrics  *Metrics
	Logger   *slog.Logger
}

// SessionLimitPolicy is what a create does when the user already holds MaxPerUser sessions
// (GATEWAY_SESSION_LIMIT_POLICY).
type SessionLimitPolicy string

const (
	// LimitEvictOldest evicts the least recently used session in the create's own script.
	LimitEvictOldest SessionLimitPolicy = "evict-oldest"
	// LimitRefuse refuses the create (422 session-limit-reached) until a session ends.
	LimitRefuse SessionLimitPolicy = "refuse"
)

// MaxSessionCacheTTL bounds SessionOptions.CacheTTL: how long a cached session may be served
// should Redis's invalidation push be lost.
const MaxSessionCacheTTL = time.Minute

// Sessions keeps sessions, their device index and MFA challenges. Reads go to the primary
// (rueidis' default; replica reads are never enabled); only Authorize may read through the
// client-side cache (SessionOptions.CacheTTL).
type Sessions struct {
	client   rueidis.Client
	keys     Keys
	mode     store.FieldExpiry
	o        SessionOptions
	fraction string
	idleMs   string
	// cacheTTL is 0 when the hot path reads Redis on every call.
	cacheTTL time.Duration
	// now is the gateway clock the cached hot path decides with (tests replace it).
	now          func() time.Time
	hits, misses atomic.Int64
	// refreshing holds a slot per background refresh (maxBackgroundRefreshes).
	refreshing chan struct{}
	// written marks sessions this gateway just changed (nil with the cache off).
	written *RecentWrites
	// memo keeps decoded sessions from the client-side cache (nil with the cache off).
	memo *authMemo
}

// ErrSessionOptions reports unusable options.
var ErrSessionOptions = errors.New("repo: bad session options")

// NewSessions returns the session repository over s with keys under k.Prefix.
func NewSessions(s *store.Store, k Keys, o SessionOptions) (*Sessions, error) {
	switch {
	case s == nil || s.Client == nil:
		return nil, fmt.Errorf("%w: no store", ErrSessionOptions)
	case k.Prefix == "":
		return nil, fmt.Errorf("%w: empty key prefix", ErrSessionOptions)
	case !(o.RefreshFraction > 0 && o.RefreshFraction < 1):
		return nil, fmt.Errorf("%w: refresh fraction must be within (0, 1)", ErrSessionOptions)
	case o.MaxPerUser < 1 || o.MaxPerUser > MaxSessionsPerUser:
		return nil, fmt.Errorf("%w: max sessions per user must be within 1..%d", ErrSessionOptions, MaxSessionsPerUser)
	case o.LimitPolicy != "" && o.LimitPolicy != LimitEvictOldest && o.LimitPolicy != LimitRefuse:
		return nil, fmt.Errorf("%w: unknown session limit policy %q", ErrSessionOptions, o.LimitPolicy)
	case o.CacheTTL < 0 || o.CacheTTL > MaxSessionCacheTTL:
		return nil, fmt.Errorf("%w: cache TTL must be within 0..%v", ErrSessionOptions, MaxSessionCacheTTL)
	}
	if o.MFA.Name == "" {
		o.MFA.Name = MFAPolicyName
	}
	if err := o.MFA.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSessionOptions, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mode := s.Caps.FieldExpiry
	switch mode {
	case store.FieldExpiryHSETEX, store.FieldExpiryHEXPIRE, store.FieldExpiryFallback:
	default:
		return nil, fmt.Errorf("%w: unknown field-expiry mode %q", ErrSessionOptions, mode)
	}
	r := &Sessions{client: s.Client, keys: k, mode: mode, o: o, now: time.Now,
		fraction:   strconv.FormatFloat(o.RefreshFraction, 'f', -1, 64),
		idleMs:     strconv.FormatInt(ImplicitIdle.Milliseconds(), 10),
		refreshing: make(chan struct{}, maxBackgroundRefreshes)}
	if s.Caps.ClientCache {
		r.cacheTTL = o.CacheTTL
		r.written = NewRecentWrites(o.CacheTTL)
		if s.Invalidations != nil {
			r.memo = newAuthMemo(o.CacheTTL, r.keys.Prefix+":v1:"+sessKeyType+":{")
			s.Invalidations.Subscribe(r.memo.invalidate)
		}
	}
	return r, nil
}

// NewSession is what Create writes.
type NewSession struct {
	// Ref derives from the token's SHA-256: finding the key proves the token, so no hash of the
	// token is stored.
	Ref       SessionRef
	UserID    string
	TenantID  string
	Status    string
	AuthLevel string
	// LoginPending: the login waits for its MFA verify (Status must be MFA_REQUIRED).
	LoginPending bool
	// DeviceLabel is shown in device lists; IPHash and UserAgentHash are keyed hashes.
	DeviceLabel   string
	IPHash        string
	UserAgentHash string
	Idle          time.Duration
	Absolute      time.Duration
}

// Session is a session's view: never its token or any hash of it.
type Session struct {
	Ref               SessionRef
	UserID            string
	TenantID          string
	Status            string
	AuthLevel         string
	DeviceLabel       string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	LastSeenAt        time.Time
	LastRotatedAt     time.Time
	MFAVerifiedAt     time.Time
	IdleExpiresAt     time.Time
	AbsoluteExpiresAt time.Time
	FailedMFAAttempts int64
	SchemaVersion     int
	// ChallengeLive is true while an MFA challenge can still be answered. Get and List know;
	// Authorize's view reads only the hash, so in the fallback mode (challenge in its own key)
	// it leaves this false.
	ChallengeLive bool
	// LoginPending is true for a session created with mfaRequired until its MFA is verified:
	// it is not logged in yet (forward auth, whoami and the device operations refuse it).
	// A step-up challenge on a logged-in session leaves it false.
	LoginPending bool
}

// Create writes the session hash (with its TTL: the shorter of the idle timeout and the
// absolute timeout) and adds it to the user's device index, in one script (session_create.lua)
// that touches only those two keys under the cap. At the cap (MaxPerUser index members) the
// script answers with the index's members, and Create runs it again with every member's keys
// declared: in that one atomic step it drops members whose session is gone, then evicts the
// least recently used sessions (LimitEvictOldest, the default) or refuses with
// apperr.SessionLimit (LimitRefuse). An evicted session is deleted as a revocation deletes it
// (every replica's cached copy is invalidated by Redis's push; this gateway marks it written),
// and counted (hashgate_repo_transitions{transition="evict"}). When the index changes between
// the read and the script (concurrent logins of the user), the script writes nothing and
// answers the new members; after sessCreateAttempts rounds Create gives up (apperr.Unavailable).
func (r *Sessions) Create(ctx context.Context, n NewSession) (*Session, error) {
	if err := n.check(); err != nil {
		return nil, err
	}
	n.Status, n.AuthLevel = cmp.Or(n.Status, SessionActive), cmp.Or(n.AuthLevel, LevelBasic)
	pairs := [][2]string{
		{sfUserID, n.UserID}, {sfTenantID, n.TenantID}, {sfSchemaVersion, strconv.Itoa(SchemaVersion)},
		{sfDeviceLabel, n.DeviceLabel}, {sfIPHash, n.IPHash}, {sfUserAgentHash, n.UserAgentHash},
	}
	// Readers take an absent status for ACTIVE and an absent authLevel for BASIC.
	if n.Status != SessionActive {
		pairs = append(pairs, [2]string{sfStatus, n.Status})
	}
	if n.AuthLevel != LevelBasic {
		pairs = append(pairs, [2]string{sfAuthLevel, n.AuthLevel})
	}
	if n.LoginPending {
		pairs = append(pairs, [2]string{sfLoginPending, "1"})
	}
	if n.Idle != ImplicitIdle { // readers fall back to ImplicitIdle
		pairs = append(pairs, [2]string{sfIdleTimeout, strconv.FormatInt(n.Idle.Milliseconds(), 10)})
	}
	var fields []string
	size := 0
	for _, p := range pairs {
		if p[1] == "" {
			continue
		}
		fields = append(fields, p[0], p[1])
		size += len(p[0]) + len(p[1])
	}
	// Three timestamp fields are added by the script, each at most 40 bytes.
	if nf := len(fields)/2 + 3; nf > SessionMaxFields || size+3*40 > SessionMaxBytes {
		return nil, apperr.Newf(apperr.BoundExceeded, "A session holds at most %d fields and %d bytes.", SessionMaxFields, SessionMaxBytes)
	}
	policy := "evict"
	if r.o.LimitPolicy == LimitRefuse {
		policy = "refuse"
	}
	withChallenges := "0"
	if r.mode == store.FieldExpiryFallback {
		withChallenges = "1"
	}
	head := []string{strconv.Itoa(r.o.MaxPerUser), strconv.FormatInt(n.Idle.Milliseconds(), 10),
		strconv.FormatInt(n.Absolute.Milliseconds(), 10), n.Ref.Part, policy}
	var candidates []string // the index's members, once the create found the cap reached
	for range sessCreateAttempts {
		keys := make([]string, 0, 2+2*len(candidates))
		keys = append(keys, r.sessionKey(n.Ref), r.devicesKey(n.Ref.Tag))
		for _, p := range candidates {
			keys = append(keys, r.sessionKey(SessionRef{Tag: n.Ref.Tag, Part: p}))
		}
		if withChallenges == "1" {
			for _, p := range candidates {
				keys = append(keys, r.challengeKey(SessionRef{Tag: n.Ref.Tag, Part: p}))
			}
		}
		args := make([]string, 0, len(head)+2+len(candidates)+len(fields))
		args = append(append(append(append(args, head...), strconv.Itoa(len(candidates)), withChallenges), candidates...), fields...)
		rep, err := r.run(ctx, "session_create", scriptSessionCreate, keys, args)
		if err != nil {
			return nil, err
		}
		switch rep.Code() {
		case CodeOK: // {'OK', nowMs, ttlMs, absoluteExpiresAtMs, <evicted idPart>...}
			d := rep.Reader()
			now, ttl, abs := d.Int(0), d.Int(1), d.Int(2)
			if err := d.Err(); err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			evicted, err := rep.Strs(3)
			if err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			r.evicted(ctx, n.Ref.Tag, evicted)
			r.o.Metrics.Transition(ctx, sessObject, "create", "ok")
			return &Session{Ref: n.Ref, UserID: n.UserID, TenantID: n.TenantID, Status: n.Status, AuthLevel: n.AuthLevel,
				LoginPending: n.LoginPending, DeviceLabel: n.DeviceLabel, CreatedAt: sessTime(now), UpdatedAt: sessTime(now), LastSeenAt: sessTime(now),
				LastRotatedAt: sessTime(now), IdleExpiresAt: sessTime(now + ttl), AbsoluteExpiresAt: sessTime(abs),
				SchemaVersion: SchemaVersion}, nil
		case CodeRetry: // {'RETRY', members, <idPart>...}: at the cap, call again naming them
			if _, err := rep.Int(0); err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			if candidates, err = rep.Strs(1); err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			if len(candidates) == 0 { // a full index answers its members; anything else is a bug
				return nil, r.badReply(ctx, "session_create", rep.Unexpected())
			}
		case CodeBound: // {'BOUND', live members}: the refuse policy
			live, err := rep.Int(0)
			if err != nil {
				return nil, r.badReply(ctx, "session_create", err)
			}
			r.o.Metrics.Transition(ctx, sessObject, "create", "bound")
			return nil, apperr.Newf(apperr.SessionLimit,
				"The user already has %d live sessions, the maximum (GATEWAY_SESSION_MAX_PER_USER); revoke one first.", live)
		case CodeExists:
			r.o.Metrics.Transition(ctx, sessObject, "create", "exists")
			return nil, fmt.Errorf("session create %s: id collision: %w", n.Ref.ID(), rep.Err(""))
		default:
			return nil, r.badReply(ctx, "session_create", rep.Unexpected())
		}
	}
	r.o.Metrics.Transition(ctx, sessObject, "create", "contended")
	return nil, apperr.New(apperr.Unavailable, "The user's sessions kept changing while a new one was being made room for; retry shortly.")
}

// sessCreateAttempts bounds Create's rounds at the cap: each reads the index's members (in the
// script's reply) and runs the script with their keys; logins of the same user racing for the
// last places can make a round's candidates stale, and the next round reads them again.
const sessCreateAttempts = 8

// evicted marks and counts the sessions a create evicted (their id parts, from its reply).
func (r *Sessions) evicted(ctx context.Context, tag string, parts []string) {
	now := r.now()
	for _, p := range parts {
		// This gateway's cached copy may predate the eviction for the moment its push takes.
		r.written.mark(SessionRef{Tag: tag, Part: p}, now)
		r.o.Metrics.Transition(ctx, sessObject, "evict", "lru")
	}
}

func (n NewSession) check() error {
	bad := func(what string) error {
		return apperr.Newf(apperr.BoundExceeded, "The session's %s exceeds its bound.", what)
	}
	switch {
	case n.UserID == "" || n.TenantID == "" || !sessB64URL(n.Ref.Tag) || !sessB64URL(n.Ref.Part):
		return apperr.New(apperr.Validation, "A session needs a user, a tenant and a token.")
	case len(n.UserID) > MaxUserIDBytes:
		return bad("userId")
	case len(n.TenantID) > MaxTenantBytes:
		return bad("tenant")
	case len(n.DeviceLabel) > MaxDeviceLabelBytes:
		return bad("device label")
	case len(n.IPHash) > MaxDeviceHashBytes || len(n.UserAgentHash) > MaxDeviceHashBytes:
		return bad("device hash")
	case n.Idle < time.Second || n.Absolute < n.Idle:
		return apperr.New(apperr.Validation, "The idle timeout must be at least 1s and at most the absolute timeout.")
	case n.LoginPending && n.Status != SessionMFARequired:
		return apperr.New(apperr.Validation, "A session whose login waits for MFA starts in MFA_REQUIRED.")
	}
	return nil
}

// Get reads the full view of one session of tenant (another tenant's answers NotFound) in one
// round trip: HMGET of the view fields and PTTL (plus the challenge key's existence in the
// fallback mode).
func (r *Sessions) Get(ctx context.Context, ref SessionRef, tenant string) (*Session, error) {
	key := r.sessionKey(ref)
	cmds := rueidis.Commands{
		r.client.B().Hmget().Key(key).Field(sessViewFields...).Build(),
		r.client.B().Pttl().Key(key).Build(),
	}
	if r.mode == store.FieldExpiryFallback {
		cmds = append(cmds, r.client.B().Exists().Key(r.challengeKey(ref)).Build())
	}
	res := r.client.DoMulti(ctx, cmds...)
	for _, x := range res {
		if err := x.Error(); err != nil {
			return nil, redisErr("session get", err)
		}
	}
	vals, err := res[0].ToArray()
	if err != nil {
		return nil, redisErr("session get", err)
	}
	pttl, err := res[1].AsInt64()
	if err != nil {
		return nil, redisErr("session get", err)
	}
	m, size, err := sessFields(vals, sessViewFields)
	if err != nil {
		return nil, fmt.Errorf("session get: %w", err)
	}
	if len(m) == 0 || pttl == -2 {
		r.o.Metrics.Read(ctx, sessObject, Missing)
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	r.o.Metrics.Payload(ctx, sessObject, size)
	s, err := r.parseView(ctx, ref, m, time.Now().UnixMilli(), pttl)
	if err != nil {
		return nil, err
	}
	if s.TenantID != tenant {
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	}
	if r.mode == store.FieldExpiryFallback {
		n, _ := res[2].AsInt64()
		s.ChallengeLive = n == 1
	}
	r.classifyChallenge(ctx, s, m)
	return s, nil
}

// parseView maps view fields to a Session, classifying (and counting) old schema and corrupt.
func (r *Sessions) parseView(ctx context.Context, ref SessionRef, m map[string]string, now, pttl int64) (*Session, error) {
	f := newFields(m)
	s, _ := decodeView(f, ref)
	outcome := f.schema()
	if err := f.err(sessObject); err != nil {
		return nil, r.corrupt(ctx, ref, f, err)
	}
	s.SchemaVersion = sessSchema(outcome)
	s.IdleExpiresAt = s.AbsoluteExpiresAt
	if pttl >= 0 {
		s.IdleExpiresAt = sessIdleEnd(now, pttl, s.AbsoluteExpiresAt)
	}
	r.o.Metrics.Read(ctx, sessObject, outcome)
	return &s, nil
}

// decodeView maps the view fields in f to a Session and returns the session's idle timeout in
// ms, recording missing and malformed fields in f; the caller classifies with f.schema() and
// f.err(). Every reader (the hot path, the full view, the device list) decodes here, so a
// field is corrupt for all of them or for none.
func decodeView(f *fields, ref SessionRef) (Session, int64) {
	s := Session{Ref: ref, UserID: f.str(sfUserID), TenantID: f.str(sfTenantID), Status: sessEnum(f, sfStatus, SessionActive),
		AuthLevel: sessEnum(f, sfAuthLevel, LevelBasic), CreatedAt: sessTime(f.int64(sfCreatedAt)), LastSeenAt: sessTime(f.optInt64(sfLastSeenAt)),
		AbsoluteExpiresAt: sessTime(f.int64(sfAbsoluteExpires)), UpdatedAt: sessTime(f.optInt64(sfUpdatedAt)),
		LastRotatedAt: sessTime(f.optInt64(sfLastRotatedAt)), MFAVerifiedAt: sessTime(f.optInt64(sfMFAVerifiedAt)),
		DeviceLabel: f.opt(sfDeviceLabel), FailedMFAAttempts: f.optInt64(sfFailedMFA), ChallengeLive: f.opt(sfChallengeID) != "",
		LoginPending: sessFlag(f, sfLoginPending)}
	// Written only once they differ from createdAtMs: by the first idle refresh, by rotation
	// and step-up.
	if s.LastSeenAt.IsZero() {
		s.LastSeenAt = s.CreatedAt
	}
	if s.LastRotatedAt.IsZero() {
		s.LastRotatedAt = s.CreatedAt
	}
	sessCheckEnums(f, s.Status, s.AuthLevel)
	return s, sessIdleMs(f)
}

// sessIdleMs is the session's idle timeout in ms. idleTimeoutMs is written only when the
// session's timeout is not ImplicitIdle (and never by schema 1): without it ImplicitIdle
// applies, never the configuration of the moment. A present value must be a positive integer;
// anything else is recorded as bad in f (corrupt: never served with a default).
func sessIdleMs(f *fields) int64 {
	v, ok := f.m[sfIdleTimeout]
	if !ok {
		return ImplicitIdle.Milliseconds()
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		f.bad = append(f.bad, sfIdleTimeout)
		return 0
	}
	return n
}

// sessFlag reads a flag field: absent is false, "1" true, anything else is recorded as bad.
func sessFlag(f *fields, name string) bool {
	v, ok := f.m[name]
	if ok && v != "1" {
		f.bad = append(f.bad, name)
	}
	return ok
}

// sessEnum is the value of the enum field name, def when the hash does not hold it (written
// only once it differs from def). A present value, even empty, is checked by sessCheckEnums.
func sessEnum(f *fields, name, def string) string {
	if v, ok := f.m[name]; ok {
		return v
	}
	return def
}

// sessSchema is the schema version a read classified as outcome carries.
func sessSchema(o Outcome) int {
	if o == OldSchema {
		return SchemaVersion - 1
	}
	return SchemaVersion
}

// classifyChallenge counts a session waiting in MFA_REQUIRED whose challenge has expired.
func (r *Sessions) classifyChallenge(ctx context.Context, s *Session, m map[string]string) {
	if s.Status == SessionMFARequired && !s.ChallengeLive && m[sfChallengeAt] != "" {
		r.o.Metrics.Read(ctx, sessObject, ExpiredChallenge)
	}
}

// Rotate moves the session to next (the new token's reference) in one script: the old token
// stops working at once, the TTL and absolute deadline are kept, the index swaps members.
func (r *Sessions) Rotate(ctx context.Context, ref SessionRef, tenant string, next SessionRef) (*Session, error) {
	if next.Tag != ref.Tag {
		return nil, fmt.Errorf("session rotate %s: the new reference must keep the user's tag", ref.ID())
	}
	r.written.mark(ref, r.now())
	keys := []string{r.sessionKey(ref), r.sessionKey(next), r.devicesKey(ref.Tag), r.challengeKey(ref), r.challengeKey(next)}
	rep, err := r.run(ctx, "session_rotate", scriptSessionRotate, keys, []string{tenant, ref.Part, next.Part})
	if err != nil {
		return nil, err
	}
	switch rep.Code() {
	case CodeOK:
	case CodeNotFound:
		r.o.Metrics.Transition(ctx, sessObject, "rotate", "missing")
		return nil, fmt.Errorf("session %s: %w", ref.ID(), apperr.NotFound)
	case CodeExists:
		return nil, fmt.Errorf("session rotate %s: id collision: %w", ref.ID(), rep.Err(""))
	default:
		return nil, r.badReply(ctx, "session_rotate", rep.Unexpected())
	}
	// {'OK', nowMs, pttlMs, status, authLevel, createdAtMs, absoluteExpiresAtMs}
	d := rep.Reader()
	now, pttl := d.Int(0), d.Int(1)
	status, ok := d.OptStr(2)
	if !ok { // written only once it differs from its default
		status = SessionActive
	}
	level, ok := d.OptStr(3)
	if !ok {
		level = LevelBasic
	}
	created, _ := d.OptStr(4)
	abs, _ := d.OptStr(5)
	if err := cmp.Or(rep.Want(6), d.Err()); err != nil {
		return nil, r.badReply(ctx, "session_rotate", err)
	}
	r.o.Metrics.Transition(ctx, sessObject, "rotate", "ok")
	s := &Session{Ref: next, TenantID: tenant, Status: status, AuthLevel: level, CreatedAt: sessTime(sessAtoi(created)),
		LastRotatedAt: sessTime(now), UpdatedAt: sessTime(now), AbsoluteExpiresAt: sessTime(sessAtoi(abs)), SchemaVersion: SchemaVersion}
	s.IdleExpiresAt = s.AbsoluteExpiresAt
	if pttl >= 0 {
		s.IdleExpiresAt = sessIdleEnd(now, pttl, s.AbsoluteExpiresAt)
	}
	return s, nil
}

// Revoke deletes one session of tenant with its challenge key and index entry. It reports
// whether a live session was deleted; another tenant's session is left alone (false).
func (r *Sessions) Revoke(ctx context.Context, ref SessionRef, tenant string) (bool, error) {
	r.written.mark(ref, r.now())
	rep, err := r.run(ctx, "session_revoke", scriptSessionRevoke,
		[]string{r.sessionKey(ref), r.devicesKey(ref.Tag), r.challengeKey(ref)}, []string{tenant, ref.Part})
	if err != nil {
		return false, err
	}
	outcome := "other_tenant"
	switch rep.Code() {
	case CodeOK: // {'OK', 1} revoked | {'OK', 0} already gone
		n, err := rep.Int(0)
		if err = cmp.Or(rep.Want(1), err); err != nil || n != 0 && n != 1 {
			return false, r.badReply(ctx, "session_revoke", cmp.Or(err, rep.Unexpected()))
		}
		outcome = map[int64]string{1: "ok", 0: "gone"}[n]
	case CodeNotFound: // another tenant's session, untouched
	default:
		return false, r.badReply(ctx, "session_revoke", rep.Unexpected())
	}
	r.o.Metrics.Transition(ctx, sessObject, "revoke", outcome)
	return outcome == "ok", nil
}

// MFAChallenge is an MFA challenge to store: only the HMAC of its code.
type MFAChallenge struct {
	Ref     SessionRef
	Tenant  string
	ID      string
	CodeMAC string
	TTL     time.Duration
}

// StartChallenge stores c with its own TTL (per the server's field-expiry mode) and sets the
// session MFA_REQUIRED; it returns when the challenge expires.
func (r *Sessions) StartChallenge(ctx context.Context, c MFAChallenge) (time.Time, error) {
	secs := int64((c.TTL + time.Second - 1) / time.Second)
	if secs < 1 || !sessB64URL(c.ID) || c.CodeMAC == "" {
		return time.Time{}, apperr.New(apperr.Validation, "A challenge needs an id, a code MAC and a TTL of at least 1s.")
	}
	r.written.mark(c.Ref, r.now())
	rep, err := r.run(ctx, "session_challenge", scriptSessionChallenge, []string{r.sessionKey(c.Ref), r.challengeKey(c.Ref)},
		[]string{c.Tenant, string(r.mode), c.ID, c.CodeMAC, strconv.FormatInt(secs, 10), strconv.Itoa(SchemaVersion)})
	if err != nil {
		return time.Time{}, err
	}
	switch rep.Code() {
	case CodeOK: // {'OK', nowMs, expiresAtMs}
		exp, err := rep.Int(1)
		if err = cmp.Or(rep.Want(2), err); err != nil {
			return time.Time{}, r.badReply(ctx, "session_challenge", err)
		}
		r.o.Metrics.Transition(ctx, sessObject, "mfa_challenge", "ok")
		return sessTime(exp), nil
	case CodeNotFound:
		r.o.Metrics.Transition(ctx, sessObject, "mfa_challenge", "missing")
		return time.Time{}, fmt.Errorf("session %s: %w", c.Ref.ID(), apperr.NotFound)
	}
	return time.Time{}, r.badReply(ctx, "session_challenge", rep.Unexpected())
}

// MFAVerification is one MFA verification attempt; on success the session moves to Next.
type MFAVerification struct {
	Ref         SessionRef
	Tenant      string
	ChallengeID string
	CodeMAC     string
	Next        SessionRef
}

// VerifyOutcome is how an attempt ended.
type VerifyOutcome string

const (
	VerifyOK          VerifyOutcome = "verified"
	VerifyWrongCode   VerifyOutcome = "wrong_code"
	VerifyLimited     VerifyOutcome = "rate_limited"
	VerifyNoChallenge VerifyOutcome = "no_challenge"
)

// VerifyResult is the outcome of Verify.
type VerifyResult struct {
	Outcome VerifyOutcome
	// Limit is the attempt counter's decision (every attempt counts, whatever its outcome).
	Limit          ratelimit.Decision
	FailedAttempts int64
	// Session is set on success: the stepped-up session under its new reference.
	Session *Session
}

// Verify runs one attempt in one script: count it in the user's fixed-window counter, compare
// the code's MAC with the live challenge's, and on success step up, delete the challenge and
// rotate. A missing session (or another tenant's) is apperr.NotFound and is not counted.
func (r *Sessions) Verify(ctx context.Context, v MFAVerification) (*VerifyResult, error) {
	if v.Next.Tag != v.Ref.Tag {
		return nil, fmt.Errorf("session verify %s: the new reference must keep the user's tag", v.Ref.ID())
	}
	where := "field"
	if r.mode == store.FieldExpiryFallback {
		where = "key"
	}
	p := r.o.MFA
	keys := []string{r.sessionKey(v.Ref), r.sessionKey(v.Next), r.devicesKey(v.Ref.Tag),
		ratelimit.Key(r.keys.Prefix, v.Ref.Tag, p.Name), r.challengeKey(v.Ref)}
	args := []string{v.Tenant, where, v.ChallengeID, v.CodeMAC, strconv.Itoa(p.Limit),
		strconv.FormatInt(p.Window.Milliseconds(), 10), strconv.FormatInt(p.Buffer().Milliseconds(), 10),
		v.Ref.Part, v.Next.Part}
	r.written.mark(v.Ref, r.now())
	rep, err := r.run(ctx, "session_verify", scriptSessionVerify, keys, args)
	if err != nil {
		return nil, err
	}
	// Every attempt that reached the counter answers its count and reset first.
	want := map[Code]int{CodeLimited: 2, CodeNoChallenge: 3, CodeWrongCode: 3, CodeOK: 5}
	switch rep.Code() {
	case CodeNotFound:
		r.o.Metrics.Transition(ctx, sessObject, "mfa_verify", "missing")
		return nil, fmt.Errorf("session %s: %w", v.Ref.ID(), apperr.NotFound)
	case CodeExists:
		return nil, fmt.Errorf("session verify %s: id collision: %w", v.Ref.ID(), rep.Err(""))
	case CodeLimited, CodeNoChallenge, CodeWrongCode, CodeOK:
	default:
		return nil, r.badReply(ctx, "session_verify", rep.Unexpected())
	}
	d := rep.Reader()
	count, reset := d.Int(0), d.Int(1)
	var arg int64 // hadChallenge, failedMfaAttempts
	if rep.Code() == CodeNoChallenge || rep.Code() == CodeWrongCode {
		arg = d.Int(2)
	}
	if err := cmp.Or(rep.Want(want[rep.Code()]), d.Err()); err != nil {
		return nil, r.badReply(ctx, "session_verify", err)
	}
	res := &VerifyResult{Limit: ratelimit.Decision{Policy: p, Allowed: rep.Code() != CodeLimited, Count: int(count),
		Reset: time.Duration(reset) * time.Millisecond}}
	switch rep.Code() {
	case CodeLimited:
		res.Outcome = VerifyLimited
	case CodeNoChallenge:
		res.Outcome = VerifyNoChallenge
		if arg == 1 {
			r.o.Metrics.Read(ctx, sessObject, ExpiredChallenge)
		}
	case CodeWrongCode:
		res.Outcome, res.FailedAttempts = VerifyWrongCode, arg
	case CodeOK:
		now, pttl, abs := d.Int(2), d.Int(3), d.Int(4)
		if err := d.Err(); err != nil {
			return nil, r.badReply(ctx, "session_verify", err)
		}
		res.Outcome = VerifyOK
		res.Session = &Session{Ref: v.Next, TenantID: v.Tenant, Status: SessionMFAVerified, AuthLevel: LevelMFA,
			MFAVerifiedAt: sessTime(now), UpdatedAt: sessTime(now), LastRotatedAt: sessTime(now),
			AbsoluteExpiresAt: sessTime(abs), IdleExpiresAt: sessTime(abs), SchemaVersion: SchemaVersion}
		if pttl >= 0 {
			res.Session.IdleExpiresAt = sessIdleEnd(now, pttl, res.Session.AbsoluteExpiresAt)
		}
	}
	r.o.Metrics.Transition(ctx, sessObject, "mfa_verify", string(res.Outcome))
	return res, nil
}

// sessCheckEnums marks status and authLevel bad when they hold an unknown value (an empty
// one included: absent fields were given their default by sessEnum).
func sessCheckEnums(f *fields, status, level string) {
	switch status {
	case SessionActive, SessionMFARequired, SessionMFAVerified:
	default:
		f.bad = append(f.bad, sfStatus)
	}
	switch level {
	case LevelBasic, LevelMFA:
	default:
		f.bad = append(f.bad, sfAuthLevel)
	}
}

// corrupt counts and logs a corrupt session (key pattern and field names, never values).
func (r *Sessions) corrupt(ctx context.Context, ref SessionRef, f *fields, err error) error {
	r.o.Metrics.Read(ctx, sessObject, Corrupt)
	r.o.Logger.WarnContext(ctx, "corrupt session hash refused", "key_pattern", r.sessionKeyPattern(), "fields", f.bad)
	return fmt.Errorf("session %s: %w", ref.ID(), err)
}

// run executes a session script and decodes its reply (reply.go). A driver failure is
// classified by scriptErr; a reply that breaks its script's declared shape is counted as a
// script error.
func (r *Sessions) run(ctx context.Context, name string, l *rueidis.Lua, keys, args []string) (Reply, error) {
	rep, err := callScript(ctx, r.client, name, l, keys, args)
	if err != nil {
		return Reply{}, r.scriptErr(ctx, name, err)
	}
	return rep, nil
}

// scriptErr classifies a script failure: connectivity → unavailable; anything else is a Lua
// transition error, counted by script. A key of the wrong type where a session belongs is a
// corrupt session (refused, never served).
func (r *Sessions) scriptErr(ctx context.Context, name string, err error) error {
	if store.IsUnavailable(err) {
		return redisErr(name, err)
	}
	r.o.Metrics.ScriptError(ctx, name)
	return r.readErr(ctx, name, err)
}

// readErr classifies a failed read of a session key: a key of the wrong type is a corrupt
// session (counted, logged by key pattern); anything else as redisErr does.
func (r *Sessions) readErr(ctx context.Context, op string, err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok && strings.Contains(re.Error(), "WRONGTYPE") {
		r.o.Metrics.Read(ctx, sessObject, Corrupt)
		r.o.Logger.WarnContext(ctx, "session key holds the wrong type", "key_pattern", r.sessionKeyPattern(), "op", op)
		return fmt.Errorf("%s: %w: wrong key type", op, ErrCorrupt)
	}
	return redisErr(op, err)
}

// badReply counts a reply of the wrong shape (err wraps ErrReply) as a script error.
func (r *Sessions) badReply(ctx context.Context, name string, err error) error {
	r.o.Metrics.ScriptError(ctx, name)
	return err
}

// sessFields maps names to vals (one HMGET value each: a string, or nil when the hash does
// not hold the field), skipping absent ones, and returns the bytes read. A value of another
// type, or a count other than len(names), wraps ErrReply.
func sessFields(vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	return fillFields(make(map[string]string, len(names)), vals, names)
}

// fieldMaps recycles the maps the hot path decodes a session into (one per request
// otherwise: a map of 16 strings is the largest allocation of an authorization).
var fieldMaps = sync.Pool{New: func() any { return make(map[string]string, len(sessAuthFields)) }}

// pooledFields is sessFields with a recycled map; the caller hands it back with
// releaseFields once nothing refers to the map any more (the values themselves are the
// reply's strings). On error the map is already released.
func pooledFields(vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	m, size, err := fillFields(fieldMaps.Get().(map[string]string), vals, names)
	if err != nil {
		releaseFields(m)
		return nil, 0, err
	}
	return m, size, nil
}

func releaseFields(m map[string]string) {
	clear(m)
	fieldMaps.Put(m)
}

func fillFields(m map[string]string, vals []rueidis.RedisMessage, names []string) (map[string]string, int, error) {
	if len(vals) != len(names) {
		return m, 0, fmt.Errorf("%w: %d values for %d fields", ErrReply, len(vals), len(names))
	}
	size := 0
	for i, n := range names {
		v := &vals[i]
		switch {
		case v.IsNil():
		case v.IsString():
			s, _ := v.ToString()
			m[n] = s
			size += len(n) + len(s)
		default:
			return m, 0, fmt.Errorf("%w: field %s is not a string", ErrReply, n)
		}
	}
	return m, size, nil
}

func sessAtoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// sessIdleEnd is when the key expires, never reported past the absolute deadline (the
// server's TIME and PTTL may differ by a millisecond of rounding).
func sessIdleEnd(now, pttl int64, abs time.Time) time.Time {
	end := sessTime(now + pttl)
	if !abs.IsZero() && end.After(abs) {
		return abs
	}
	return end
}

func sessTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
