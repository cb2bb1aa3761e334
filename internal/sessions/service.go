// Package sessions is the session service: opaque session tokens that carry the user's tag,
// sliding and absolute expiry, MFA step-up with one-time codes kept only as HMACs, token
// rotation, devices and revocation, and the forward-auth hot path (Authenticate). State lives
// in Redis through a Store (internal/repo/sessionstore); this package owns the token format and every secret.
package sessions

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/hashgate/hashgate/internal/apperr"
	"github.com/hashgate/hashgate/internal/auth"
	"github.com/hashgate/hashgate/internal/events"
	"github.com/hashgate/hashgate/internal/keyhash"
	"github.com/hashgate/hashgate/internal/recent"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Config holds the service's defaults.
type Config struct {
	// IdleTimeout and AbsoluteTimeout apply when a create request names none.
	IdleTimeout     time.Duration
	AbsoluteTimeout time.Duration
	// ChallengeTTL is how long an MFA code can be answered.
	ChallengeTTL time.Duration
	Logger       *slog.Logger
	// Meter records authentication outcomes (nil: none).
	Meter metric.Meter
	// RecentWritesMax bounds the read-your-writes marks (0: recent.DefaultMax).
	RecentWritesMax int
	// Audit, when set, logs each session change this service makes whose event is not written
	// (audit.go): the relay logs the written ones as it copies them.
	Audit *events.Audit
	// Events is which session events the store writes (GATEWAY_SESSION_EVENTS; "" as off).
	Events events.SessionEvents
}

// Service implements session management and handlers.SessionAuthenticator.
type Service struct {
	store  Store
	hasher *keyhash.Hasher
	cfg    Config
	m      *instruments
	// written marks the sessions this gateway just changed: for one cache TTL, Authenticate
	// reads them from Redis, not from the client-side cache (nil with the cache off).
	written *recent.Writes
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("sessions: bad configuration")

// New returns the service over r; h keys user tags, device hashes and MFA code MACs.
func New(r Store, h *keyhash.Hasher, c Config) (*Service, error) {
	switch {
	case r == nil || h == nil:
		return nil, fmt.Errorf("%w: repository and hasher are required", ErrConfig)
	case c.IdleTimeout < time.Second || c.AbsoluteTimeout < c.IdleTimeout:
		return nil, fmt.Errorf("%w: idle timeout must be ≥1s and ≤ the absolute timeout", ErrConfig)
	case c.ChallengeTTL < time.Second:
		return nil, fmt.Errorf("%w: challenge TTL must be at least 1s", ErrConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meter == nil {
		c.Meter = noop.NewMeterProvider().Meter("sessions")
	}
	// A repository that checks owners must check them as this service does (OwnerCheck over
	// the same key): its verdicts replace this service's own check.
	probe := h.Tag(userTagPurpose, userTagBytes, "probe-tenant", "probe-user")
	if v := r.CheckOwner(probe, "probe-tenant", "probe-user"); v == session.OwnerMismatch ||
		v == session.OwnerMatches && r.CheckOwner(probe, "probe-tenant", "other-user") != session.OwnerMismatch {
		return nil, fmt.Errorf("%w: the repository's owner check is not this service's (OwnerCheck over another key)", ErrConfig)
	}
	m, err := newInstruments(c.Meter, r.CacheStats)
	if err != nil {
		return nil, err
	}
	svc := &Service{store: r, hasher: h, cfg: c, m: m}
	if ttl := r.CacheTTL(); ttl > 0 {
		svc.written = recent.New(ttl, c.RecentWritesMax)
	}
	return svc, nil
}

// CreateInput is a create request; zero timeouts take the configured defaults.
type CreateInput struct {
	UserID          string
	AuthLevel       string
	MFARequired     bool
	DeviceLabel     string
	UserAgent       string
	IP              string
	IdleTimeout     time.Duration
	AbsoluteTimeout time.Duration
	// Groups are the user's groups (checkGroups' bounds).
	Groups []string
}

// Issued is a session with its token, shown once.
type Issued struct {
	session.Session
	Token string
}

// Challenge is a started MFA challenge; Code goes to the user out of band and is never stored.
type Challenge struct {
	ID        string
	Code      string
	ExpiresAt time.Time
}

const (
	codeDigits     = 6
	challengeIDLen = 22
)

const invalidSessionDetail = "The session token is not valid: it is malformed, expired or revoked."

// invalidSession is the one refusal every session-token failure gets (401).
func invalidSession() *apperr.Error {
	return apperr.New(apperr.InvalidCredentials, invalidSessionDetail)
}

// The user tag is the user's opaque tag: the base64url of the first userTagBytes of a keyed
// hash of tenant and user id (12 characters).
const (
	userTagPurpose = "user"
	userTagBytes   = 9
)

func (s *Service) userTag(tenant, userID string) string {
	return s.hasher.Tag(userTagPurpose, userTagBytes, tenant, userID)
}

// codeMAC is the stored form of a code, bound to the user and the challenge.
func (s *Service) codeMAC(tag, challengeID, code string) string {
	return base64.RawURLEncoding.EncodeToString(s.hasher.Sum("mfa-code", tag, challengeID, code))
}

// Create starts a session for a user of tenant.
func (s *Service) Create(ctx context.Context, tenant string, in CreateInput) (*Issued, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	if err := in.check(s.cfg.IdleTimeout, s.cfg.AbsoluteTimeout); err != nil {
		return nil, err
	}
	token, ref, mac, err := newToken(s.hasher, session.Ref{Tag: s.userTag(tenant, in.UserID)})
	if err != nil {
		return nil, err
	}
	n := session.Record{Ref: ref, VerifierMAC: mac, UserID: in.UserID, TenantID: tenant, Status: session.Active,
		AuthLevel: in.AuthLevel, DeviceLabel: in.DeviceLabel, Idle: in.IdleTimeout, Absolute: in.AbsoluteTimeout, Groups: in.Groups}
	if in.MFARequired {
		n.Status, n.LoginPending = session.MFARequired, true
	}
	if in.IP != "" {
		n.IPHash = s.hasher.Tag("session-ip", 16, tenant, in.IP)
	}
	if in.UserAgent != "" {
		n.UserAgentHash = s.hasher.Tag("session-ua", 16, in.UserAgent)
	}
	v, err := s.store.Create(ctx, n)
	if err != nil {
		return nil, err
	}
	for _, gone := range v.Evicted {
		s.wrote(gone)
		s.audit(ctx, events.SessionEvicted, tenant, gone)
	}
	s.audit(ctx, events.SessionCreated, tenant, ref)
	return &Issued{Session: v.Session, Token: token}, nil
}

// wrote marks a session this gateway changed (ref.Part empty: every session of the user). Redis
// pushes the invalidation of every cached copy after the write's reply, so for a moment this
// gateway's next request could still find the old copy; marked, it reads Redis instead.
func (s *Service) wrote(ref session.Ref) { s.written.Mark(ref.Tag, ref.Part, time.Now()) }

// Authenticate resolves a session token to its principal, sliding the idle window when little
// of it is left: at most one Redis round trip reading six fields, none for a hot session
// when the repository keeps decoded copies. Any failure but Redis trouble is
// apperr.InvalidCredentials (401), whatever the cause, so callers learn nothing more.
func (s *Service) Authenticate(ctx context.Context, token string) (*auth.Principal, error) {
	return s.authenticate(ctx, token, false)
}

// AuthenticateView is Authenticate for "who am I": the principal carries the session's full
// view (Principal.Session), read in the same single round trip (none when a copy is kept).
func (s *Service) AuthenticateView(ctx context.Context, token string) (*auth.Principal, error) {
	return s.authenticate(ctx, token, true)
}

func (s *Service) authenticate(ctx context.Context, token string, view bool) (*auth.Principal, error) {
	ref, id, mac, ok := parseToken(s.hasher, token)
	if !ok {
		s.m.auth(ctx, authMalformed)
		return nil, invalidSession()
	}
	ac, err := s.authorize(ctx, ref, mac, view)
	switch {
	case errors.Is(err, apperr.NotFound):
		s.m.auth(ctx, authUnknown)
		return nil, invalidSession()
	case errors.Is(err, session.ErrWrongVerifier):
		s.m.auth(ctx, authWrongVerifier)
		return nil, invalidSession()
	case errors.Is(err, apperr.ErrCorrupt):
		s.m.auth(ctx, authCorrupt)
		return nil, apperr.Wrap(apperr.InvalidCredentials, invalidSessionDetail, err)
	case err != nil:
		return nil, err
	}
	// The tag is part of the token; the stored owner must hash to it.
	if !s.ownerMatches(ref, ac) {
		s.m.auth(ctx, authTagMismatch)
		s.cfg.Logger.WarnContext(ctx, "session refused: stored owner does not match the token's user tag")
		return nil, invalidSession()
	}
	s.m.auth(ctx, authOK)
	p := &auth.Principal{Kind: auth.KindSession, Subject: ac.UserID, Tenant: ac.TenantID, SessionID: id,
		AuthLevel: ac.AuthLevel, ExpiresAt: ac.IdleExpiresAt, LoginPending: ac.LoginPending, Groups: ac.Groups, Derived: ac.Derived}
	if !ac.Partial {
		p.Session = &ac.Session
	}
	return p, nil
}

// ownerMatches reports whether the session's stored owner hashes to its token's tag: the
// repository's verdict when it applies OwnerCheck (New made sure it is this service's rule;
// the verdict is kept with the memo's copy, so a hot session is not hashed on every request),
// else computed here.
func (s *Service) ownerMatches(ref session.Ref, ac *session.AuthContext) bool {
	switch ac.Owner {
	case session.OwnerMatches:
		return true
	case session.OwnerMismatch:
		return false
	}
	return s.hasher.TagEqual(ref.Tag, userTagPurpose, userTagBytes, ac.TenantID, ac.UserID)
}

// OwnerCheck is the rule ownerMatches applies, for the store's owner check (sessionstore.Options.OwnerCheck): the
// repository built with it checks owners as a Service over h does.
func OwnerCheck(h *keyhash.Hasher) func(tag, tenantID, userID string) bool {
	return func(tag, tenantID, userID string) bool {
		return h.TagEqual(tag, userTagPurpose, userTagBytes, tenantID, userID)
	}
}

// authorize reads the session through the repository, which accepts it only when its stored
// verifier MAC is mac: from Redis, never a kept copy, when this gateway has just changed it
// (internal/recent).
func (s *Service) authorize(ctx context.Context, ref session.Ref, mac string, view bool) (*session.AuthContext, error) {
	return s.store.Authorize(ctx, ref, session.AuthorizeOptions{View: view, VerifierMAC: mac,
		Fresh: s.written.Marked(ref.Tag, ref.Part, time.Now())})
}

// newVerifier is a new token for the session id names (the same selector, a new verifier) and
// its MAC, for a rotation or a step-up; the session is marked written, so this gateway's next
// read of it goes to Redis.
func (s *Service) newVerifier(id string) (r session.Ref, token, mac string, err error) {
	if r, err = ref(id); err != nil {
		return r, "", "", err
	}
	if token, _, mac, err = newToken(s.hasher, r); err != nil {
		return r, "", "", err
	}
	s.wrote(r)
	return r, token, mac, nil
}

// ref parses a session id from a path; a malformed id is simply not found.
func ref(id string) (session.Ref, error) {
	r, ok := session.ParseID(id)
	if !ok {
		return session.Ref{}, fmt.Errorf("session id: %w", apperr.NotFound)
	}
	return r, nil
}

// Get is the full view of a session of tenant. A corrupt session (counted and logged by the
// repository) is answered as the hot path answers it: like a missing one, never served.
func (s *Service) Get(ctx context.Context, tenant, id string) (*session.Session, error) {
	r, err := ref(id)
	if err != nil {
		return nil, err
	}
	v, err := s.store.Get(ctx, r, tenant)
	if errors.Is(err, apperr.ErrCorrupt) {
		return nil, fmt.Errorf("%w: %w", apperr.NotFound, err)
	}
	return v, err
}

// Revoke deletes a session of tenant; it is idempotent.
func (s *Service) Revoke(ctx context.Context, tenant, id string) error {
	r, err := ref(id)
	if err != nil {
		return nil
	}
	s.wrote(r)
	deleted, err := s.store.Revoke(ctx, r, tenant)
	s.auditEnded(ctx, tenant, r, deleted)
	return err
}

// SetGroups replaces the groups of a session of tenant and returns its view. This gateway reads
// the session from Redis for a cache TTL after (wrote); every other one drops its copy on
// Redis's invalidation push.
func (s *Service) SetGroups(ctx context.Context, tenant, id string, groups []string) (*session.Session, error) {
	if err := checkGroups("/groups", groups); err != nil {
		return nil, err
	}
	r, err := ref(id)
	if err != nil {
		return nil, err
	}
	s.wrote(r)
	v, err := s.store.SetGroups(ctx, r, tenant, groups)
	if errors.Is(err, apperr.ErrCorrupt) {
		return nil, fmt.Errorf("%w: %w", apperr.NotFound, err)
	}
	return v, err
}

// Rotate gives the session a new token (a new verifier, the same id); the old token stops
// working at once and the absolute deadline is kept.
func (s *Service) Rotate(ctx context.Context, tenant, id string) (*Issued, error) {
	r, token, mac, err := s.newVerifier(id)
	if err != nil {
		return nil, err
	}
	v, err := s.store.Rotate(ctx, r, tenant, mac)
	if err != nil {
		return nil, err
	}
	s.audit(ctx, events.SessionRotated, tenant, r)
	return &Issued{Session: *v, Token: token}, nil
}

// RevokeUser revokes every session of a user of tenant except the one with id except ("" for
// none) in one atomic step, and returns how many it revoked.
func (s *Service) RevokeUser(ctx context.Context, tenant, userID, except string) (int, error) {
	if err := checkUserID("path:userId", userID); err != nil {
		return 0, err
	}
	tag := s.userTag(tenant, userID)
	part := ""
	if except != "" {
		r, ok := session.ParseID(except)
		if !ok || r.Tag != tag {
			return 0, fieldErr("query:except", "is not a session of this user")
		}
		part = r.Part
	}
	s.wrote(session.Ref{Tag: tag})
	n, err := s.store.RevokeAll(ctx, tag, part)
	s.auditRevokedAll(ctx, tenant, tag, n)
	return n, err
}
