package sessionstore

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/repo"
	"github.com/hashgate/hashgate/internal/sessions/session"
)

// layout is where sessions live in Redis (SessionOptions.Layout): the reads and script calls
// that differ between the per-session layout (perSessionLayout) and the per-user one
// (perUserLayout). Sessions does the rest the same way for either: checking inputs, decoding,
// durable writes, metrics, and the memo and absent cache in front of the hot path.
type layout interface {
	create(ctx context.Context, n session.Record, own []string) (*session.Created, error)
	get(ctx context.Context, ref session.Ref, tenant string) (*session.Session, error)
	// readPlain, readTracked and authorizeScript are the hot path's three reads
	// (sessions_authorize_read.go says which runs when).
	// mac is the presented token's verifier MAC: the answer is ErrWrongVerifier unless it is
	// the session's, and the script slides the idle window only when it is.
	readPlain(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error)
	readTracked(ctx context.Context, ref session.Ref, view bool, mac string, now time.Time) (*session.AuthContext, error)
	authorizeScript(ctx context.Context, ref session.Ref, view bool, mac string) (*session.AuthContext, error)
	// The writes run on c, the pinned connection of a durable write, and answer the script's
	// reply for Sessions to decode.
	setGroups(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, joined string) (repo.Reply, error)
	rotate(ctx context.Context, c rueidis.Client, ref session.Ref, tenant, mac string) (repo.Reply, error)
	revoke(ctx context.Context, c rueidis.Client, ref session.Ref, tenant string) (rep repo.Reply, script string, err error)
	challenge(ctx context.Context, c session.MFAChallenge, secs int64) (repo.Reply, error)
	verify(ctx context.Context, c rueidis.Client, v session.MFAVerification) (repo.Reply, error)
	list(ctx context.Context, tag, tenant string) ([]session.Session, error)
	revokeAll(ctx context.Context, tag, exceptPart string) (int, error)
	// keyPattern names the key holding a session in logs.
	keyPattern() string
	// outboxKey is the key a session write script declares last for the user's events: the
	// outbox stream (per session); "" per user, whose events go into the user's hash.
	outboxKey(tag string) string
}

// perSessionLayout keeps one hash per session and the user's device index (a sorted set).
type perSessionLayout struct {
	*Sessions
	// challengeKeys: the MFA challenge lives in a key of its own beside the session (a server
	// without hash field expiry: store.FieldExpiryFallback), not in fields with their own TTL.
	challengeKeys bool
}

// perUserLayout keeps all of a user's sessions in the user's hash, each session's fields with
// their own field TTL (per_user.go).
type perUserLayout struct{ *Sessions }

func (r perSessionLayout) outboxKey(tag string) string { return r.keys.EventOutbox(tag) }
func (perUserLayout) outboxKey(string) string          { return "" }
