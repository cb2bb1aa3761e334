package sessionstore

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
	"github.com/hashgate/hashgate/internal/store"
)

// ExpiredChallenge classifies a session read whose MFA challenge expired (or was never
// answered) while the session still waits in MFA_REQUIRED.
const ExpiredChallenge repo.Outcome = "expired_challenge"

// sessObject names sessions in metrics.
const sessObject = "session"

// Bounds of a session hash: it holds at most SessionMaxFields fields and SessionMaxBytes of
// names and values. Inputs are checked against the per-field bounds before any write.
const (
	SessionMaxFields   = 25
	SessionMaxBytes    = 4096
	MaxDeviceHashBytes = 64
	// MaxSessionsPerUser is the largest SessionOptions.MaxPerUser: the device index never holds
	// more members, and List reads at most that many.
	MaxSessionsPerUser = 1000
)

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
	// Layout is where sessions live: LayoutPerUser ("" means the same), which needs hash field
	// expiry (Hosts), or LayoutPerSession. It is never picked from the server.
	Layout SessionLayout
	// MFA is the per-user attempt policy of MFA verification.
	MFA ratelimit.Policy
	// CacheTTL is how long the hot path may keep a session it read (at most
	// MaxSessionCacheTTL), so a hot session costs no round trip; Redis's invalidation push
	// drops a kept copy as soon as the session changes, and this bounds staleness should a push
	// be lost. 0, or a store without client-side caching (Caps.ClientCache false: the embedded
	// store, or caching turned off), reads Redis on every call.
	CacheTTL time.Duration
	// CacheEntries bounds the decoded sessions kept (the memo): past it a new session is read
	// from Redis on every request until entries expire. 0 means DefaultSessionCacheEntries;
	// negative keeps none (the hot path then reads through rueidis' cache).
	CacheEntries int
	// AbsentTTL is how long a reference Redis has just found no session for is refused
	// without asking again (the absent cache, sessions_absent.go), at most MaxSessionAbsentTTL:
	// a caller repeating an unknown token costs one read per TTL. 0 means
	// DefaultSessionAbsentTTL; negative turns it off.
	AbsentTTL time.Duration
	// AbsentEntries bounds the absent cache (past it the oldest entry goes). 0 means
	// DefaultSessionAbsentEntries; negative turns it off.
	AbsentEntries int
	// OwnerCheck, when set, is the session service's rule that a session's stored owner
	// (tenant, user) is the one its token's tag names. The repository applies it once per
	// session it decodes and keeps the verdict with the memo's copy (AuthContext.Owner), so a
	// hot session is not hashed again on every request. nil: AuthContext.Owner is
	// OwnerUnchecked and the caller checks.
	OwnerCheck func(tag, tenantID, userID string) bool
	// Outbox is which session events are written (GATEWAY_SESSION_EVENTS; "" as off): a
	// session write appends them where the layout keeps the user's pending events — per user
	// in the user's hash (the script's one key), per session in the user's outbox stream (one
	// more key). With the ends only, a write that cannot end a session passes no envelope.
	Outbox events.SessionEvents
	// Events bounds the users' pending events (default events.DefaultMaxAge, DefaultMaxLen): their
	// max age, and the outbox stream's length (per session; per user at most
	// repo.EventOutboxMax).
	Events events.Retention
	// Relay, when set, is told the user's tag after each write that appended events to the
	// user's outbox (eventstore.Relay.Notify: it copies them into the tenant's stream).
	Relay   func(userTag string)
	Metrics *repo.Metrics
	Logger  *slog.Logger
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

// SessionLayout is where sessions live (GATEWAY_SESSION_LAYOUT; docs/KEYS.md, "Sessions").
type SessionLayout string

const (
	// LayoutPerUser keeps all of a user's sessions in one hash, <prefix>:v1:sess:{<userTag>}:
	// the user's fields once, each session's as "<idPart>:<field>" with the session's idle
	// deadline as their field TTL. One key per user instead of two per session (a hash and the
	// device index): about 360 B of Redis memory per session instead of about 480 B. Needs hash
	// field expiry in milliseconds (Redis >= 7.4): on another server NewSessions fails.
	LayoutPerUser SessionLayout = "per-user"
	// LayoutPerSession keeps one hash per session plus the user's device index (a sorted set).
	// A gateway in one layout does not see the sessions kept in the other.
	LayoutPerSession SessionLayout = "per-session"
)

// DefaultSessionCacheEntries is SessionOptions.CacheEntries' default.
const DefaultSessionCacheEntries = 131072

// Defaults and bound of the absent cache (SessionOptions.AbsentTTL and AbsentEntries).
const (
	DefaultSessionAbsentTTL     = 2 * time.Second
	DefaultSessionAbsentEntries = 65536
	MaxSessionAbsentTTL         = time.Minute
)

// MaxSessionCacheTTL bounds SessionOptions.CacheTTL: how long a cached session may be served
// should Redis's invalidation push be lost.
const MaxSessionCacheTTL = time.Minute

// Sessions keeps sessions, their device index and MFA challenges. Reads go to the primary
// (rueidis' default; replica reads are never enabled); only the authorize reads keep a copy
// (the memo, for SessionOptions.CacheTTL).
type Sessions struct {
	client  rueidis.Client
	metrics *repo.Metrics
	log     *slog.Logger
	// dur confirms the writes that end a credential (durable.go).
	dur      *store.Durable
	keys     repo.Keys
	mode     store.FieldExpiry
	o        SessionOptions
	expiry   session.Expiry
	fraction string
	idleMs   string
	// cacheTTL is 0 when the hot path reads Redis on every call.
	cacheTTL time.Duration
	// now is the gateway clock the cached hot path decides with (tests replace it).
	now          func() time.Time
	hits, misses atomic.Int64
	// refreshing holds a slot per background refresh (maxBackgroundRefreshes).
	refreshing chan struct{}
	// memo keeps decoded sessions (nil with the cache off).
	memo *authMemo
	// absent remembers references just found missing (nil when off).
	absent *absentCache
	// broadcast: Redis pushes every write to a session key (broadcast tracking), so the memo
	// is filled by plain reads and rueidis keeps no copy of sessions.
	broadcast bool
	// layout is where sessions live (perSessionLayout or perUserLayout).
	layout layout
}

// ErrLayoutUnsupported reports a layout the server cannot host (Hosts).
var ErrLayoutUnsupported = errors.New("the server cannot host this session layout")

// Hosts says whether a server with caps can host layout l: the per-user layout needs hash
// field expiry in milliseconds (HPEXPIRE, HPTTL; Redis >= 7.4); the per-session layout runs
// anywhere. The error names what is missing.
func Hosts(caps store.Capabilities, l SessionLayout) error {
	if (l == LayoutPerUser || l == "") && (caps.FieldExpiry == store.FieldExpiryFallback || !caps.FieldExpiryMs) {
		return fmt.Errorf("%w: the per-user layout needs hash field expiry (Redis >= 7.4); %s has none",
			ErrLayoutUnsupported, cmp.Or(caps.ServerVersion, "this server"))
	}
	return nil
}

// NewSessions returns the session repository over s with keys under k.Prefix.
func NewSessions(s *store.Store, k repo.Keys, o SessionOptions) (*Sessions, error) {
	if err := repo.CheckBase("sessions", s, k.Prefix); err != nil {
		return nil, err
	}
	switch {
	case !(o.RefreshFraction > 0 && o.RefreshFraction < 1):
		return nil, fmt.Errorf("%w: refresh fraction must be within (0, 1)", repo.ErrBadOptions)
	case o.MaxPerUser < 1 || o.MaxPerUser > MaxSessionsPerUser:
		return nil, fmt.Errorf("%w: max sessions per user must be within 1..%d", repo.ErrBadOptions, MaxSessionsPerUser)
	case o.LimitPolicy != "" && o.LimitPolicy != LimitEvictOldest && o.LimitPolicy != LimitRefuse:
		return nil, fmt.Errorf("%w: unknown session limit policy %q", repo.ErrBadOptions, o.LimitPolicy)
	case o.Layout != "" && o.Layout != LayoutPerUser && o.Layout != LayoutPerSession:
		return nil, fmt.Errorf("%w: unknown session layout %q", repo.ErrBadOptions, o.Layout)
	case o.CacheTTL < 0 || o.CacheTTL > MaxSessionCacheTTL:
		return nil, fmt.Errorf("%w: cache TTL must be within 0..%v", repo.ErrBadOptions, MaxSessionCacheTTL)
	case o.AbsentTTL > MaxSessionAbsentTTL:
		return nil, fmt.Errorf("%w: absent cache TTL must be at most %v", repo.ErrBadOptions, MaxSessionAbsentTTL)
	}
	if o.MFA.Name == "" {
		o.MFA.Name = MFAPolicyName
	}
	if err := o.MFA.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", repo.ErrBadOptions, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Events = o.Events.OrDefault()
	if err := Hosts(s.Caps, o.Layout); err != nil {
		return nil, err
	}
	mode := s.Caps.FieldExpiry
	switch mode {
	case store.FieldExpiryHSETEX, store.FieldExpiryHEXPIRE, store.FieldExpiryFallback:
	default:
		return nil, fmt.Errorf("%w: unknown field-expiry mode %q", repo.ErrBadOptions, mode)
	}
	r := &Sessions{client: s.Client, metrics: o.Metrics, log: o.Logger, dur: s.Durable, keys: k, mode: mode, o: o, now: time.Now,
		expiry:     session.Expiry{RefreshFraction: o.RefreshFraction},
		fraction:   strconv.FormatFloat(o.RefreshFraction, 'f', -1, 64),
		idleMs:     strconv.FormatInt(ImplicitIdle.Milliseconds(), 10),
		refreshing: make(chan struct{}, maxBackgroundRefreshes)}
	if o.Layout == LayoutPerSession {
		r.layout = perSessionLayout{Sessions: r, challengeKeys: mode == store.FieldExpiryFallback}
	} else {
		r.layout = perUserLayout{r}
	}
	if o.AbsentTTL == 0 {
		o.AbsentTTL = DefaultSessionAbsentTTL
	}
	if o.AbsentEntries == 0 {
		o.AbsentEntries = DefaultSessionAbsentEntries
	}
	if o.AbsentTTL > 0 && o.AbsentEntries > 0 {
		r.absent = newAbsentCache(r.keys.Prefix+":v1:"+sessKeyType+":{", o.AbsentTTL, o.AbsentEntries)
		if s.Invalidations != nil {
			s.Invalidations.Subscribe(r.absent.invalidate)
		}
	}
	if s.Caps.ClientCache {
		r.cacheTTL = o.CacheTTL
		if o.CacheEntries == 0 {
			o.CacheEntries = DefaultSessionCacheEntries
		}
		if s.Invalidations != nil && o.CacheEntries > 0 {
			r.memo = newAuthMemo(r.keys.Prefix+":v1:"+sessKeyType+":{", int64(o.CacheEntries))
			s.Invalidations.Subscribe(r.memo.invalidate)
			// Without the memo, plain reads would keep no copy: the hot path then reads
			// through rueidis' cache (readTracked), under either tracking mode.
			r.broadcast = s.Caps.Broadcasts(r.keys.Prefix + ":v1:" + sessKeyType + ":")
		}
	}
	return r, nil
}

// CacheTTL is how long Authorize may serve a session from its kept copy: 0 when every
// call reads Redis. The service guards its own writes for as long (internal/recent).
func (r *Sessions) CacheTTL() time.Duration { return r.cacheTTL }
