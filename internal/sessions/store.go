package sessions

import (
	"context"
	"time"

	"github.com/hashgate/hashgate/internal/ratelimit"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// Store keeps sessions in Redis (internal/repo/sessionstore implements it; internal/app builds
// it). A missing session is apperr.NotFound, an unreadable one wraps apperr.ErrCorrupt, Redis
// trouble wraps storeerr.ErrUnavailable.
type Store interface {
	Create(ctx context.Context, n session.Record) (*session.Created, error)
	Get(ctx context.Context, ref session.Ref, tenant string) (*session.Session, error)
	// Authorize reads the session (its full view, or only its hot fields: o) and slides the idle
	// window when it is due.
	Authorize(ctx context.Context, ref session.Ref, o session.AuthorizeOptions) (*session.AuthContext, error)
	// Rotate replaces the session's verifier with the one whose MAC is verifierMAC: the old
	// token stops working, the id stays.
	Rotate(ctx context.Context, ref session.Ref, tenant, verifierMAC string) (*session.Session, error)
	SetGroups(ctx context.Context, ref session.Ref, tenant string, groups []string) (*session.Session, error)
	Revoke(ctx context.Context, ref session.Ref, tenant string) (bool, error)
	List(ctx context.Context, tag, tenant string) ([]session.Session, error)
	RevokeAll(ctx context.Context, tag, exceptPart string) (int, error)
	StartChallenge(ctx context.Context, c session.MFAChallenge) (time.Time, error)
	Verify(ctx context.Context, v session.MFAVerification) (*session.VerifyResult, error)
	// MFAPolicy is the attempt policy Verify counts under.
	MFAPolicy() ratelimit.Policy
	// CheckOwner is the store's verdict on a session's stored owner for tag (OwnerUnchecked
	// when the store does not check owners).
	CheckOwner(tag, tenantID, userID string) session.OwnerVerdict
	// CacheTTL is how long Authorize may serve a kept copy (0: every call reads Redis).
	CacheTTL() time.Duration
	// CacheStats counts the authorizations the kept copy answered and those that read Redis.
	CacheStats() (hits, misses int64)
}
